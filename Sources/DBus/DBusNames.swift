internal import CDBus

/// Validation of names, paths, signatures and strings before they reach libdbus, which
/// aborts the process on invalid ones. Every failure is a ``DBusError`` `InvalidArgs`.
enum DBusNames {
    static let busName = "org.freedesktop.DBus"
    static let busPath = "/org/freedesktop/DBus"
    static let localInterface = "org.freedesktop.DBus.Local"

    static func validateString(_ value: String) throws(DBusError) {
        if value.utf8.contains(0) {
            throw DBusError.invalidArgs("The string \(quoted(value)) contains a NUL character, which D-Bus does not allow.")
        }
        let ok = value.withCString { dbus_validate_utf8($0, nil) } != 0
        if !ok { throw DBusError.invalidArgs("The string \(quoted(value)) is not valid UTF-8 for D-Bus.") }
    }

    static func validateObjectPath(_ value: String) throws(DBusError) {
        try check(value, "object path", "must start with '/' and have elements of [A-Za-z0-9_] separated by single '/'") {
            dbus_validate_path($0, nil)
        }
    }

    static func validateInterface(_ value: String) throws(DBusError) {
        try check(value, "interface name", "must be two or more dot-separated elements of [A-Za-z0-9_]") {
            dbus_validate_interface($0, nil)
        }
    }

    static func validateMember(_ value: String) throws(DBusError) {
        try check(value, "member name", "must be one element of [A-Za-z0-9_] not starting with a digit") {
            dbus_validate_member($0, nil)
        }
    }

    static func validateBusName(_ value: String) throws(DBusError) {
        try check(value, "bus name", "must be a unique name (:1.2) or dot-separated elements") {
            dbus_validate_bus_name($0, nil)
        }
    }

    static func validateErrorName(_ value: String) throws(DBusError) {
        try check(value, "error name", "must be two or more dot-separated elements of [A-Za-z0-9_]") {
            dbus_validate_error_name($0, nil)
        }
    }

    /// Any sequence of complete types (a message body signature or a `g` value).
    static func validateSignature(_ value: String) throws(DBusError) {
        try check(value, "type signature", "must be complete D-Bus types, at most 255 characters") {
            dbus_signature_validate($0, nil)
        }
    }

    /// Exactly one complete type (array element, variant content, dict value).
    static func validateSingleType(_ value: String) throws(DBusError) {
        try check(value, "type signature", "must be exactly one complete D-Bus type") {
            dbus_signature_validate_single($0, nil)
        }
    }

    private static func check(
        _ value: String, _ what: String, _ rule: String, _ validator: (UnsafePointer<CChar>) -> dbus_bool_t
    ) throws(DBusError) {
        let ok = !value.utf8.contains(0) && value.withCString { validator($0) } != 0
        if !ok { throw DBusError.invalidArgs("Invalid D-Bus \(what) \(quoted(value)): it \(rule).") }
    }

    private static func quoted(_ value: String) -> String {
        let shown = value.count > 80 ? String(value.prefix(80)) + "…" : value
        return "\"" + shown.replacingAll("\0", with: "\\0") + "\""
    }
}
