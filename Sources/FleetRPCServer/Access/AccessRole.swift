/// What a client may do, decided from its credentials by ``AccessPolicy``.
public enum AccessRole: String, Sendable, Hashable {
    /// Root or a member of the control group: every method.
    case control
    /// A member of the read-only group: read methods only.
    case readOnly = "read-only"
    /// Anyone else: nothing.
    case none
}
