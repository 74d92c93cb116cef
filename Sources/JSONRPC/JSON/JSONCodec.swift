import FoundationEssentials

/// The one JSON codec of blefleet: Foundation's `JSONEncoder` and `JSONDecoder`, set up once.
/// Frames, results, notifications, MQTT payloads and `--json` output all go through here.
public enum JSONCodec {
    /// Compact, object members in key order (output is stable, and a person can compare it).
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    private static let decoder = JSONDecoder()

    /// Compact JSON text (UTF-8), object members sorted by key.
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }

    /// Reads `bytes` as one JSON text of type `type`.
    public static func decode<Value: Decodable>(_ type: Value.Type, from bytes: some Collection<UInt8>) throws -> Value {
        try decoder.decode(type, from: Data(bytes))
    }

    /// A decoding error as a sentence a person can act on, without Swift type names.
    public static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "the top level" : "\"" + names.joined(separator: ".") + "\""
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            if let underlying = context.underlyingError {
                return "the text is not valid JSON (\(underlying))"
            }
            return "the text is not valid JSON"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(path(context)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "\"\(key.stringValue)\" is missing at \(path(context))"
        @unknown default:
            return "\(error)"
        }
    }
}
