import FleetRPC
public import JSONRPC
import FoundationEssentials

/// JSON as blectl prints it, written by the one codec (Foundation's `JSONEncoder`): pretty
/// (two-space indent, keys sorted) for one document per command, compact for one object
/// per line.
public enum JSONText {
    private static let prettyEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// One line, keys sorted.
    public static func compact(_ value: JSONValue) -> String {
        value.description
    }

    /// Indented with two spaces, keys sorted, no trailing newline.
    public static func pretty(_ value: some Encodable) throws -> String {
        String(decoding: try prettyEncoder.encode(value), as: UTF8.self)
    }

    /// Indented with two spaces, keys sorted, no trailing newline (non-finite numbers, which
    /// JSON cannot hold, as null).
    public static func pretty(_ value: JSONValue) -> String {
        guard let data = try? prettyEncoder.encode(value) else { return value.description }
        return String(decoding: data, as: UTF8.self)
    }
}
