/// How a failed connect attempt should be handled. The BlueZ boundary maps each
/// `org.bluez.Error.*` onto one of these.
public enum ConnectErrorClass: String, Sendable, Hashable, CaseIterable {
    /// Worth retrying shortly: `le-connection-abort-by-local`, `InProgress`, timeouts.
    case transient
    /// The controller is out of connection slots or resources: retry after a longer wait.
    case outOfResources = "out-of-resources"
    /// The board is not there (gone from BlueZ, not advertising): wait for its next advertisement.
    case absent
    /// Retrying cannot help (`NotPermitted`, `NotAuthorized`…): stop and mark the board failed.
    case permanent

    /// The code reported to callers waiting on a connect that failed this way.
    public var errorCode: FleetErrorCode {
        switch self {
        case .transient: .timeout
        case .outOfResources: .busy
        case .absent: .absent
        case .permanent: .failed
        }
    }
}
