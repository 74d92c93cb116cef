import CSystemd

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A listening socket the service manager passed in (socket activation, `sd_listen_fds(3)`).
public struct ActivatedSocket: Sendable, Equatable {
    /// The file descriptor, from `SD_LISTEN_FDS_START` (3) upwards. The caller owns it.
    public let fileDescriptor: Int32
    /// `FileDescriptorName=` of the socket unit (`LISTEN_FDNAMES`); systemd reports
    /// `"unknown"` when none was set.
    public let name: String

    public init(fileDescriptor: Int32, name: String) {
        self.fileDescriptor = fileDescriptor
        self.name = name
    }

    /// The sockets passed to this process, in order; empty when not socket-activated
    /// (`LISTEN_FDS` unset or `LISTEN_PID` names another process).
    ///
    /// The descriptors get `FD_CLOEXEC`. With `unsetEnvironment` (the default) the `LISTEN_*`
    /// variables are removed, so children do not see them and a second call returns nothing.
    public static func fromEnvironment(unsetEnvironment: Bool = true) throws -> [ActivatedSocket] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        let count = sd_listen_fds_with_names(unsetEnvironment ? 1 : 0, &names)
        defer {
            if let names {
                var index = 0
                while let name = names[index] {
                    free(name)
                    index += 1
                }
                free(names)
            }
        }
        if count < 0 {
            throw SystemdError.socketActivationFailed(errno: -count)
        }
        return (0..<count).map { index in
            let name = names?[Int(index)].map { String(cString: $0) } ?? "unknown"
            return ActivatedSocket(fileDescriptor: CSYSTEMD_LISTEN_FDS_START + index, name: name)
        }
    }
}
