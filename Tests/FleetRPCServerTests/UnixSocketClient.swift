import Foundation
import Glibc

/// A plain blocking POSIX Unix-socket client, independent of NIO, for end-to-end tests.
/// Every read waits at most `timeout`.
///
/// `@unchecked Sendable` because tests hand a client to a helper thread and back: it is used
/// by one thread at a time, never concurrently.
final class UnixSocketClient: @unchecked Sendable {
    /// -1 once closed: a class whose init throws after its properties are set is deinited,
    /// and closing the same number twice closes whatever another thread opened under it
    /// meanwhile (it crashed the test process on another test's pipe: FileHandle's "Bad
    /// file descriptor").
    private(set) var fd: Int32
    private var pending: [UInt8] = []

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: path.utf8.prefix(buffer.count - 1))
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            fd = -1
            throw Failure(description: "connect \(path): \(message)")
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += written
        }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// The next line (without newline), or nil at end of stream.
    func readLine(timeout: Duration = .seconds(10)) throws -> String? {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            guard try fill(until: deadline) else {
                if pending.isEmpty { return nil }
                defer { pending = [] }
                return String(decoding: pending, as: UTF8.self)
            }
        }
    }

    /// Reads everything until the server closes; fails if it does not within `timeout`.
    func readToEnd(timeout: Duration = .seconds(10)) throws -> [String] {
        var lines: [String] = []
        while let line = try readLine(timeout: timeout) { lines.append(line) }
        return lines
    }

    private func fill(until deadline: ContinuousClock.Instant) throws -> Bool {
        let remaining = deadline - ContinuousClock.now
        let milliseconds = max(0, Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, milliseconds)
        guard ready > 0 else { throw Failure(description: "timed out waiting for the server") }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(fd, &buffer, buffer.count, 0)
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw Failure(description: "recv: \(String(cString: strerror(errno)))")
        }
        pending += buffer[..<count]
        return count > 0
    }
}

/// Runs blocking work on its own thread so it never starves Swift's cooperative pool.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try body() })
        }
    }
}

/// Sockets bound to `path`: the listener plus every connection it accepted and still holds
/// (Linux lists accepted sockets with their listener's path in /proc/net/unix). Unlike a
/// count of this process's descriptors, other tests running meanwhile do not change it.
func socketCount(boundTo path: String) -> Int {
    guard let table = try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8) else { return -1 }
    return table.split(separator: "\n").count { $0.hasSuffix(" " + path) }
}
