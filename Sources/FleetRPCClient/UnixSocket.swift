#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A connected `AF_UNIX` stream socket; owns the file descriptor and closes it in `deinit`.
///
/// `@unchecked Sendable`: `fd` never changes after `init`; `send` is called under the
/// client's write lock (one writer at a time), `receive` only by the reader thread, and
/// `shutdown` may race them safely (the kernel serialises it and wakes a blocked `read`).
final class UnixSocket: @unchecked Sendable {
    let fd: Int32

    /// Connects to `path`, blocking until the daemon accepts (immediate for a local socket).
    init(connectingTo path: String) throws(FleetRPCClientError) {
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let pathBytes = Array(path.utf8)
        guard !pathBytes.isEmpty, !pathBytes.contains(0) else {
            throw .daemonUnreachable(socketPath: path, errno: ENOENT)
        }
        guard pathBytes.count < capacity else { throw .daemonUnreachable(socketPath: path, errno: ENAMETOOLONG) }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
            buffer[pathBytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .daemonUnreachable(socketPath: path, errno: errno) }
        var result: Int32
        repeat {
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            let code = errno
            close(fd)
            throw .daemonUnreachable(socketPath: path, errno: code)
        }
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Writes all of `bytes`; returns `false` when the connection is gone.
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Reads what is available into `buffer` (blocking); 0 at end of stream or on error.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            return max(count, 0)
        }
    }

    /// Ends both directions, waking a reader blocked in `receive`.
    func shutdownBoth() {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}
