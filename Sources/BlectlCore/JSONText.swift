public import FleetRPC

/// JSON as blectl prints it: pretty (two-space indent, keys sorted) for one document per
/// command, compact for one object per line.
public enum JSONText {
    /// One line, keys sorted.
    public static func compact(_ value: JSONValue) -> String {
        value.description
    }

    /// Indented with two spaces, keys sorted, no trailing newline.
    public static func pretty(_ value: JSONValue) -> String {
        var output = ""
        write(value, indent: 0, into: &output)
        return output
    }

    private static func write(_ value: JSONValue, indent: Int, into output: inout String) {
        let inner = String(repeating: "  ", count: indent + 1)
        let outer = String(repeating: "  ", count: indent)
        switch value {
        case .array(let elements) where !elements.isEmpty:
            output += "[\n"
            for (position, element) in elements.enumerated() {
                output += inner
                write(element, indent: indent + 1, into: &output)
                output += position < elements.count - 1 ? ",\n" : "\n"
            }
            output += outer + "]"
        case .object(let members) where !members.isEmpty:
            output += "{\n"
            let keys = members.keys.sorted()
            for (position, key) in keys.enumerated() {
                output += inner + JSONValue.string(key).description + ": "
                write(members[key]!, indent: indent + 1, into: &output)
                output += position < keys.count - 1 ? ",\n" : "\n"
            }
            output += outer + "}"
        default:
            output += value.description
        }
    }
}
