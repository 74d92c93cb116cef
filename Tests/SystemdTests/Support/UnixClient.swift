import Foundation
import TestSupport

/// Connects to a Unix stream socket, sends `text`, and returns everything the peer writes
/// until it closes the connection (reads time out after `timeoutSeconds`).
func exchange(socketPath: String, sending text: String, timeoutSeconds: Int = 10) throws -> String {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw FixtureError("socket() failed: errno \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8)) }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard connected == 0 else { throw FixtureError("connect(\(socketPath)) failed: errno \(errno)") }
    let bytes = Array(text.utf8)
    guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else {
        throw FixtureError("send failed: errno \(errno)")
    }
    var reply = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 1024)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count == 0 { break }
        guard count > 0 else { throw FixtureError("recv failed: errno \(errno)") }
        reply.append(contentsOf: buffer.prefix(count))
    }
    return String(decoding: reply, as: UTF8.self)
}
