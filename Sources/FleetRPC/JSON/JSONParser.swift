/// A strict RFC 8259 JSON parser with a nesting limit.
///
/// Written by hand rather than using `JSONDecoder` because a JSON-RPC server needs what
/// Foundation does not give: ids echoed exactly as sent (the literal text of numbers is kept
/// for `"id"` members of top-level objects), a depth cap that turns a 100 000-deep
/// `[[[[…` frame into an error instead of a stack overflow, rejection of duplicate member
/// names and of malformed UTF-8, and error messages with a byte offset.
struct JSONParser {
    /// A top-level object, with the exact `"id"` member kept aside.
    struct TopLevelObject {
        var members: [String: JSONValue]
        /// The `"id"` member as sent: `nil` when absent, `.failure` when it is not a string,
        /// number or null (the value found is in `members["id"]`).
        var id: RPCIDField
    }

    /// What the `"id"` member of a top-level object was.
    enum RPCIDField {
        case absent
        case valid(RPCID)
        case invalid
    }

    /// A parsed frame: an object, an array whose object elements kept their ids, or any other value.
    enum Frame {
        case object(TopLevelObject)
        case array([Element])
        case other(JSONValue)
    }

    enum Element {
        case object(TopLevelObject)
        case other(JSONValue)
    }

    private let bytes: [UInt8]
    private var index = 0
    private let maxDepth: Int

    init(_ bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = max(1, maxDepth)
    }

    // MARK: Entry points

    /// Parses one JSON value that must fill the whole input (whitespace aside).
    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        try expectEnd()
        return value
    }

    /// Parses a JSON-RPC frame, keeping the exact ids of the top-level object(s).
    mutating func parseFrame() throws(JSONParseError) -> Frame {
        skipWhitespace()
        let frame: Frame
        switch peek() {
        case UInt8(ascii: "{"):
            frame = .object(try parseTopLevelObject(depth: 0))
        case UInt8(ascii: "["):
            index += 1
            var elements: [Element] = []
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    if peek() == UInt8(ascii: "{") {
                        elements.append(.object(try parseTopLevelObject(depth: 1)))
                    } else {
                        elements.append(.other(try parseValue(depth: 1)))
                    }
                    skipWhitespace()
                    guard let byte = peek() else { throw error("unexpected end of input inside an array") }
                    index += 1
                    if byte == UInt8(ascii: "]") { break }
                    guard byte == UInt8(ascii: ",") else {
                        index -= 1
                        throw error("expected ',' or ']' in an array, found \(describe(byte))")
                    }
                }
            }
            frame = .array(elements)
        default:
            frame = .other(try parseValue(depth: 0))
        }
        try expectEnd()
        return frame
    }

    // MARK: Values

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard let byte = peek() else { throw error("unexpected end of input, expected a value") }
        switch byte {
        case UInt8(ascii: "{"):
            return .object(try parseObject(depth: depth, captureID: false).members)
        case UInt8(ascii: "["):
            return .array(try parseArray(depth: depth))
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber().value
        default:
            throw error("expected a value, found \(describe(byte))")
        }
    }

    private mutating func parseTopLevelObject(depth: Int) throws(JSONParseError) -> TopLevelObject {
        let parsed = try parseObject(depth: depth, captureID: true)
        return TopLevelObject(members: parsed.members, id: parsed.id)
    }

    private mutating func parseObject(
        depth: Int, captureID: Bool
    ) throws(JSONParseError) -> (members: [String: JSONValue], id: RPCIDField) {
        guard depth < maxDepth else {
            throw error("nesting is deeper than the limit of \(maxDepth) levels")
        }
        index += 1  // {
        var members: [String: JSONValue] = [:]
        var id = RPCIDField.absent
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            return (members, id)
        }
        while true {
            skipWhitespace()
            guard let byte = peek() else { throw error("unexpected end of input inside an object") }
            guard byte == UInt8(ascii: "\"") else {
                throw error("expected a member name in double quotes, found \(describe(byte))")
            }
            let keyOffset = index
            let key = try parseString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else {
                if let byte = peek() { throw error("expected ':' after member name \"\(key)\", found \(describe(byte))") }
                throw error("unexpected end of input after member name \"\(key)\"")
            }
            index += 1
            skipWhitespace()
            let value: JSONValue
            if captureID, key == "id" {
                let captured = try parseIDValue(depth: depth + 1)
                value = captured.value
                id = captured.field
            } else {
                value = try parseValue(depth: depth + 1)
            }
            guard members.updateValue(value, forKey: key) == nil else {
                throw JSONParseError("duplicate member name \"\(key)\" in an object", offset: keyOffset)
            }
            skipWhitespace()
            guard let next = peek() else { throw error("unexpected end of input inside an object") }
            index += 1
            if next == UInt8(ascii: "}") { break }
            guard next == UInt8(ascii: ",") else {
                index -= 1
                throw error("expected ',' or '}' in an object, found \(describe(next))")
            }
        }
        return (members, id)
    }

    private mutating func parseIDValue(depth: Int) throws(JSONParseError) -> (value: JSONValue, field: RPCIDField) {
        switch peek() ?? 0 {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let number = try parseNumber()
            return (number.value, .valid(.number(JSONNumber(validatedLiteral: number.literal))))
        case UInt8(ascii: "\""):
            let string = try parseString()
            return (.string(string), .valid(.string(string)))
        default:
            let value = try parseValue(depth: depth)
            return (value, value == .null ? .valid(.null) : .invalid)
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> [JSONValue] {
        guard depth < maxDepth else {
            throw error("nesting is deeper than the limit of \(maxDepth) levels")
        }
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            return elements
        }
        while true {
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard let next = peek() else { throw error("unexpected end of input inside an array") }
            index += 1
            if next == UInt8(ascii: "]") { break }
            guard next == UInt8(ascii: ",") else {
                index -= 1
                throw error("expected ',' or ']' in an array, found \(describe(next))")
            }
        }
        return elements
    }

    // MARK: Numbers

    private mutating func parseNumber() throws(JSONParseError) -> (value: JSONValue, literal: String) {
        let start = index
        var isInteger = true
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard let first = peek(), isDigit(first) else {
            throw error("a number needs a digit after '-'")
        }
        if first == UInt8(ascii: "0") {
            index += 1
            if let next = peek(), isDigit(next) {
                throw error("a number must not have a leading zero")
            }
        } else {
            skipDigits()
        }
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard let next = peek(), isDigit(next) else { throw error("a number needs a digit after '.'") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let next = peek(), isDigit(next) else { throw error("a number needs a digit in its exponent") }
            skipDigits()
        }
        let literal = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int64(literal) {
            return (.int(value), literal)
        }
        guard let value = Double(literal), value.isFinite else {
            throw JSONParseError("the number \(literal.prefix(40)) is out of range", offset: start)
        }
        return (.double(value), literal)
    }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { index += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    // MARK: Strings

    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1  // opening quote
        var scalars = String.UnicodeScalarView()
        while true {
            guard index < bytes.count else {
                throw JSONParseError("unterminated string", offset: start)
            }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                scalars.append(try parseEscape())
            case 0..<0x20:
                throw error("a control character (\(describe(byte))) must be escaped inside a string")
            case 0x20..<0x80:
                scalars.append(Unicode.Scalar(byte))
                index += 1
            default:
                scalars.append(try parseUTF8Sequence())
            }
        }
    }

    private mutating func parseEscape() throws(JSONParseError) -> Unicode.Scalar {
        let start = index
        index += 1  // backslash
        guard let byte = peek() else { throw error("unterminated escape sequence") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let unit = try parseHex4()
            switch unit {
            case 0xD800...0xDBFF:
                guard peek() == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u")
                else {
                    throw JSONParseError("\\u escape is an unpaired high surrogate", offset: start)
                }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw JSONParseError("\\u escape is an unpaired high surrogate", offset: start)
                }
                let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                return Unicode.Scalar(value)!
            case 0xDC00...0xDFFF:
                throw JSONParseError("\\u escape is an unpaired low surrogate", offset: start)
            default:
                return Unicode.Scalar(unit)!
            }
        default:
            index -= 1
            throw error("invalid escape sequence \\\(describeRaw(byte))")
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = peek() else { throw error("unexpected end of input in a \\u escape") }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("a \\u escape needs four hexadecimal digits, found \(describe(byte))")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// Decodes one multi-byte UTF-8 sequence strictly (no overlong forms, no surrogates,
    /// nothing above U+10FFFF).
    private mutating func parseUTF8Sequence() throws(JSONParseError) -> Unicode.Scalar {
        let start = index
        let lead = bytes[index]
        let length: Int
        var value: UInt32
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF:
            length = 2
            value = UInt32(lead & 0x1F)
        case 0xE0...0xEF:
            length = 3
            value = UInt32(lead & 0x0F)
            if lead == 0xE0 { secondRange = 0xA0...0xBF }
            if lead == 0xED { secondRange = 0x80...0x9F }
        case 0xF0...0xF4:
            length = 4
            value = UInt32(lead & 0x07)
            if lead == 0xF0 { secondRange = 0x90...0xBF }
            if lead == 0xF4 { secondRange = 0x80...0x8F }
        default:
            throw JSONParseError("malformed UTF-8 (byte \(describeRaw(lead)))", offset: start)
        }
        for position in 1..<length {
            let at = start + position
            guard at < bytes.count else {
                throw JSONParseError("malformed UTF-8 (truncated sequence)", offset: start)
            }
            let byte = bytes[at]
            let range = position == 1 ? secondRange : 0x80...0xBF
            guard range.contains(byte) else {
                throw JSONParseError("malformed UTF-8 (byte \(describeRaw(byte)))", offset: at)
            }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        index = start + length
        guard let scalar = Unicode.Scalar(value) else {
            throw JSONParseError("malformed UTF-8", offset: start)
        }
        return scalar
    }

    // MARK: Helpers

    private func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(),
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\t")
        {
            index += 1
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for byte in expected {
            guard peek() == byte else {
                throw JSONParseError("expected \(literal)", offset: start)
            }
            index += 1
        }
    }

    private mutating func expectEnd() throws(JSONParseError) {
        skipWhitespace()
        if let byte = peek() {
            throw error("unexpected \(describe(byte)) after the end of the JSON value")
        }
    }

    private func error(_ reason: String) -> JSONParseError {
        JSONParseError(reason, offset: index)
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte \(describeRaw(byte))"
    }

    private func describeRaw(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return String(Character(Unicode.Scalar(byte))) }
        let hex = String(byte, radix: 16, uppercase: true)
        return "0x" + (hex.count == 1 ? "0" + hex : hex)
    }
}

extension JSONValue {
    /// The default nesting limit for parsing: deeper input is refused, never a stack overflow.
    public static let defaultMaxDepth = 64

    /// Parses JSON text (UTF-8). Throws ``JSONParseError`` for anything that is not strict
    /// JSON, for duplicate member names, for malformed UTF-8, for numbers that do not fit a
    /// `Double`, and for nesting deeper than `maxDepth`.
    public init(parsing bytes: some Collection<UInt8>, maxDepth: Int = JSONValue.defaultMaxDepth)
        throws(JSONParseError)
    {
        var parser = JSONParser(Array(bytes), maxDepth: maxDepth)
        self = try parser.parseDocument()
    }

    /// Parses JSON text from a string.
    public init(parsing text: String, maxDepth: Int = JSONValue.defaultMaxDepth) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8), maxDepth: maxDepth)
    }
}
