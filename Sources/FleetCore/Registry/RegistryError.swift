#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Saving or reading the registry failed, or a registry change was invalid.
public struct RegistryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A clear sentence.
    public let message: String

    public init(message: String) { self.message = message }

    /// A failed system call on `path`.
    init(path: String, operation: String, errno code: Int32) {
        message = "Could not \(operation) \(path): \(String(cString: strerror(code)))."
    }

    public var description: String { message }
}
