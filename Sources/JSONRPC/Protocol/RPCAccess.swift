/// Whether a method only reads state or changes it; the access policy lets read-only
/// clients call `.read` methods only.
public enum RPCAccess: String, Sendable, Hashable, Codable {
    case read
    case write
}
