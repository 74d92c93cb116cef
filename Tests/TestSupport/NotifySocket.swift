public import Foundation

/// A bound `AF_UNIX`/`SOCK_DGRAM` socket standing in for systemd's notification socket.
/// A reader thread collects datagrams as they arrive (the kernel queues only a few, see
/// `net.unix.max_dgram_qlen`; a full queue blocks the sender inside `sd_notify`, exactly as a
/// stuck service manager would).
public final class NotifySocket: @unchecked Sendable {
    // Safe: the fields are immutable; the reader owns the mutable state behind its lock.
    public let path: String
    private let directory: URL
    private let reader: Reader

    public init() throws {
        directory = try makeTemporaryDirectory(prefix: "notify")
        path = directory.appendingPathComponent("notify.sock").path
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket() failed: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw FixtureError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw FixtureError("bind(\(path)) failed: errno \(errno)")
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        reader = Reader(fd: fd)
        Thread.detachNewThread { [reader] in reader.run() }
    }

    /// Every datagram received, in order. Call once the sender has finished: the reader
    /// empties the queue, stops, and closes the socket.
    public func drain() -> [String] {
        reader.stop()
    }

    /// Waits until `count` datagrams containing `text` have arrived (true), or `timeout` passes.
    public func wait(for text: String, count: Int = 1, timeout: TimeInterval) -> Bool {
        reader.wait(for: text, count: count, until: Date().addingTimeInterval(timeout))
    }

    /// The datagrams received so far, without stopping.
    public var received: [String] { reader.snapshot() }

    deinit {
        _ = reader.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Owns the socket; shared with the reader thread.
    private final class Reader: @unchecked Sendable {
        // Safe: `fd` is immutable until the reader thread closes it after its last use;
        // everything else is guarded by `lock`.
        private let fd: Int32
        private let lock = NSCondition()
        private var messages: [String] = []
        private var stopping = false
        private var done = false

        init(fd: Int32) { self.fd = fd }

        func run() {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                lock.lock()
                if count >= 0 {
                    messages.append(String(decoding: buffer.prefix(count), as: UTF8.self))
                    lock.broadcast()
                }
                if stopping && count < 0 {
                    close(fd)
                    done = true
                    lock.broadcast()
                    lock.unlock()
                    return
                }
                lock.unlock()
            }
        }

        func wait(for text: String, count: Int, until deadline: Date) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            func enough() -> Bool { messages.filter { $0.contains(text) }.count >= count }
            while !enough() {
                if done || !lock.wait(until: deadline) { return enough() }
            }
            return true
        }

        func snapshot() -> [String] {
            lock.lock()
            defer { lock.unlock() }
            return messages
        }

        /// Stops after the queue is empty (a receive times out) and returns all messages.
        func stop() -> [String] {
            lock.lock()
            defer { lock.unlock() }
            stopping = true
            while !done { lock.wait() }
            return messages
        }
    }
}
