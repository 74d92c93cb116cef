/// Why the daemon could not start or run, with the exit status it leaves with
/// (sysexits.h values, documented in blefleetd(8)).
public struct DaemonExit: Error, Sendable, CustomStringConvertible {
    /// 78 (EX_CONFIG): bad configuration file or flag.
    public static let configuration: Int32 = 78
    /// 69 (EX_UNAVAILABLE): the D-Bus bus cannot be reached, or it went away.
    public static let unavailable: Int32 = 69
    /// 73 (EX_CANTCREAT): the socket or state directory cannot be created.
    public static let cannotCreate: Int32 = 73
    /// 70 (EX_SOFTWARE): an internal failure.
    public static let software: Int32 = 70

    public let status: Int32
    public let message: String

    public init(status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { message }
}
