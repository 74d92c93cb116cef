internal import CDBus

/// Owns one reference to a libdbus `DBusMessage`.
///
/// `@unchecked Sendable`: a message is built completely on one thread and then handed to
/// the owner thread, after which it is not mutated; libdbus message reference counts are
/// atomic, so the final unref in `deinit` may run on any thread.
final class DBusMessage: @unchecked Sendable {
    let raw: OpaquePointer

    /// Takes over a reference the caller already owns.
    init(owning raw: OpaquePointer) {
        self.raw = raw
    }

    /// Adds a reference (for messages libdbus lends us, e.g. in a filter).
    init(borrowing raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    static func methodCall(
        destination: String?, path: String, interface: String?, member: String, arguments: [DBusValue]
    ) throws(DBusError) -> DBusMessage {
        if let destination { try DBusNames.validateBusName(destination) }
        try DBusNames.validateObjectPath(path)
        if let interface { try DBusNames.validateInterface(interface) }
        try DBusNames.validateMember(member)
        try validate(arguments)
        let raw = destination.withOptionalCString { dest in
            path.withCString { p in
                interface.withOptionalCString { i in
                    member.withCString { m in dbus_message_new_method_call(dest, p, i, m) }
                }
            }
        }
        guard let raw else { throw DBusError.noMemory("creating a method call") }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    static func signal(path: String, interface: String, member: String, arguments: [DBusValue]) throws(DBusError) -> DBusMessage {
        try DBusNames.validateObjectPath(path)
        try DBusNames.validateInterface(interface)
        try DBusNames.validateMember(member)
        try validate(arguments)
        let raw = path.withCString { p in
            interface.withCString { i in member.withCString { m in dbus_message_new_signal(p, i, m) } }
        }
        guard let raw else { throw DBusError.noMemory("creating a signal") }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    static func methodReturn(to call: DBusMessage, arguments: [DBusValue]) throws(DBusError) -> DBusMessage {
        try validate(arguments)
        guard let raw = dbus_message_new_method_return(call.raw) else {
            throw DBusError.noMemory("creating a method return")
        }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    /// An error reply; an invalid error name becomes `org.freedesktop.DBus.Error.Failed`.
    static func errorReply(to call: DBusMessage, error: DBusError) -> DBusMessage? {
        let name = (try? DBusNames.validateErrorName(error.name)) != nil ? error.name : DBusError.Name.failed
        let text = error.message.replacingAll("\0", with: "")
        return name.withCString { n in
            text.withCString { t in dbus_message_new_error(call.raw, n, t) }
        }.map { DBusMessage(owning: $0) }
    }

    private static func validate(_ arguments: [DBusValue]) throws(DBusError) {
        for argument in arguments { try argument.validate() }
        if !arguments.isEmpty {
            try DBusNames.validateSignature(arguments.map(\.signature).joined())
        }
    }

    // MARK: Header fields

    var type: Int32 { dbus_message_get_type(raw) }
    var isError: Bool { type == CDBUS_MESSAGE_TYPE_ERROR }
    var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    var path: String? { dbus_message_get_path(raw).map { String(cString: $0) } }
    var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }

    /// Whether the caller wants no reply (method calls only).
    var noReply: Bool { dbus_message_get_no_reply(raw) != 0 }

    func setNoReply() { dbus_message_set_no_reply(raw, 1) }

    /// The first argument when it is a string, without decoding the rest.
    var firstStringArgument: String? {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0,
            dbus_message_iter_get_arg_type(&iter) == CDBUS_TYPE_STRING
        else { return nil }
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) }
    }

    /// A ``DBusError`` from an error message: its name and first string argument.
    var asError: DBusError {
        DBusError(name: errorName ?? DBusError.Name.failed, message: firstStringArgument ?? "")
    }
}

extension Optional where Wrapped == String {
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let s): s.withCString { body($0) }
        case .none: body(nil)
        }
    }
}
