import Foundation
import Glibc

/// A tiny server that speaks newline-delimited text on a Unix socket in a fresh temporary
/// directory: each line a client sends is given to `handler` with its connection, which
/// answers with whatever bytes the test wants (replies, notifications, garbage). It tests
/// the transport of a client, not the daemon's behaviour. `stop()` (also called by
/// ``with(handler:onConnect:_:)`` when the body throws) closes everything and joins its threads.
public final class LineJSONServer: @unchecked Sendable {
    // Safe: `connections` and `threads` are guarded by `lock`; the rest is immutable.
    public let path: String
    private let directory: URL
    private let listenFD: Int32
    private let handler: @Sendable (String, Connection) -> Void
    private let onConnect: @Sendable (Connection) -> Void
    private let lock = NSLock()
    private var connections: [Connection] = []
    private var running: [DispatchSemaphore] = []
    private var stopped = false

    /// One accepted client.
    public final class Connection: @unchecked Sendable {
        // Safe: `fd` is immutable; writes are serialised by `lock`.
        public let fd: Int32
        private let lock = NSLock()

        init(fd: Int32) { self.fd = fd }

        /// Sends `text` as is (add the newline yourself).
        public func send(_ text: String) {
            send(Array(text.utf8))
        }

        public func send(_ bytes: [UInt8]) {
            lock.lock()
            defer { lock.unlock() }
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { return }
                offset += written
            }
        }

        /// Ends the connection (the client reads end of stream).
        public func close() {
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    public init(
        handler: @escaping @Sendable (String, Connection) -> Void,
        onConnect: @escaping @Sendable (Connection) -> Void = { _ in }
    ) throws {
        directory = try makeTemporaryDirectory(prefix: "linejson")
        path = directory.appendingPathComponent("s.sock").path
        self.handler = handler
        self.onConnect = onConnect
        listenFD = try Self.listen(at: path)
        let done = DispatchSemaphore(value: 0)
        running.append(done)
        Thread.detachNewThread { [self] in
            acceptLoop()
            done.signal()
        }
    }

    deinit {
        stop()
    }

    /// A socket bound at `path` that listens (or, with `listening: false`, only exists, so
    /// connecting is refused).
    public static func listen(at path: String, listening: Bool = true) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, !listening || Glibc.listen(fd, 16) == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw FixtureError("bind/listen \(path): \(message)")
        }
        return fd
    }

    /// Runs `body` with a server and always stops it afterwards.
    public static func with<T>(
        handler: @escaping @Sendable (String, Connection) -> Void,
        onConnect: @escaping @Sendable (Connection) -> Void = { _ in },
        _ body: (LineJSONServer) async throws -> T
    ) async throws -> T {
        let server = try LineJSONServer(handler: handler, onConnect: onConnect)
        defer { server.stop() }
        return try await body(server)
    }

    /// Closes the listening socket and every connection, waits (bounded) for the threads.
    public func stop() {
        lock.lock()
        if stopped {
            lock.unlock()
            return
        }
        stopped = true
        let connections = self.connections
        let running = self.running
        lock.unlock()
        shutdown(listenFD, Int32(SHUT_RDWR))
        for connection in connections { connection.close() }
        for done in running { _ = done.wait(timeout: .now() + 5) }
        Glibc.close(listenFD)
        for connection in connections { Glibc.close(connection.fd) }
        try? FileManager.default.removeItem(at: directory)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let connection = Connection(fd: fd)
            let done = DispatchSemaphore(value: 0)
            lock.lock()
            if stopped {
                lock.unlock()
                Glibc.close(fd)
                return
            }
            connections.append(connection)
            running.append(done)
            lock.unlock()
            Thread.detachNewThread { [self] in
                onConnect(connection)
                readLoop(connection)
                done.signal()
            }
        }
    }

    private func readLoop(_ connection: Connection) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(connection.fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            pending.append(contentsOf: chunk[..<count])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                handler(line, connection)
            }
        }
    }
}
