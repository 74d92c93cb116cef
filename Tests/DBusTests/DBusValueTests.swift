@testable import DBus
import Testing

/// Pure value-model tests (no bus).
struct DBusValueTests {
    @Test func signaturesOfEveryKind() {
        #expect(DBusValue.byte(1).signature == "y")
        #expect(DBusValue.bytes([]).signature == "ay")
        #expect(DBusValue.array(elementSignature: "o", []).signature == "ao")
        #expect(DBusValue.structure([.string("a"), .int32(1)]).signature == "(si)")
        #expect(DBusValue.variant(.double(1)).signature == "v")
        let managed = DBusValue.dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", [])
        #expect(managed.signature == "a{oa{sa{sv}}}")
    }

    @Test func accessorsLookThroughVariants() {
        let value = DBusValue.variant(.variant(.uint16(7)))
        #expect(value.uint16 == 7)
        #expect(value.int16 == nil)
        #expect(value.unwrapped == .uint16(7))
        #expect(DBusValue.variant(.objectPath("/a")).string == "/a")
        #expect(DBusValue.array(elementSignature: "y", [.byte(1), .byte(2)]).bytes == [1, 2])
        #expect(DBusValue.bytes([3]).array == [.byte(3)])
    }

    @Test func stringVariantDictionaryIsSortedAndKeepsVariants() {
        let dict = DBusValue.stringVariantDictionary(["b": .int32(2), "a": .variant(.string("x"))])
        guard case .dictionary("s", "v", let entries) = dict else {
            Issue.record("not an a{sv}: \(dict)")
            return
        }
        #expect(entries.map(\.key) == [.string("a"), .string("b")])
        #expect(entries.map(\.value) == [.variant(.string("x")), .variant(.int32(2))])
        #expect(dict.dictionary?["b"]?.int32 == 2)
        #expect(dict.dictionary?["b"] == .variant(.int32(2)))
    }

    @Test func matchRuleStringQuotesValues() {
        let rule = DBusMatchRule(sender: "org.bluez", pathNamespace: "/org/bluez", member: "PropertiesChanged", arg0: "it's")
        #expect(rule.ruleString ==
            "type='signal',sender='org.bluez',path_namespace='/org/bluez',member='PropertiesChanged',arg0='it'\\''s'")
    }

    @Test func matchRuleMatchesLocally() {
        let rule = DBusMatchRule(pathNamespace: "/org/bluez", interface: "a.b")
        #expect(rule.matches(sender: ":1.1", path: "/org/bluez/hci0", interface: "a.b", member: "M", arg0: nil, resolvedSender: nil))
        #expect(!rule.matches(sender: ":1.1", path: "/org/bluezz", interface: "a.b", member: "M", arg0: nil, resolvedSender: nil))
        let bySender = DBusMatchRule(sender: "org.bluez")
        #expect(bySender.matches(sender: ":1.5", path: "/", interface: "a.b", member: "M", arg0: nil, resolvedSender: .some(":1.5")))
        #expect(!bySender.matches(sender: ":1.6", path: "/", interface: "a.b", member: "M", arg0: nil, resolvedSender: .some(":1.5")))
        #expect(!bySender.matches(sender: ":1.6", path: "/", interface: "a.b", member: "M", arg0: nil, resolvedSender: .some(nil)))
    }

    @Test(arguments: [
        DBusValue.objectPath("not/a/path"), .objectPath("/trailing/"), .objectPath("/a//b"), .objectPath("/dash-ed"),
        .string("nul\0inside"), .signature("a{"), .signature("(ii"),
        .array(elementSignature: "s", [.int32(1)]), .array(elementSignature: "ss", []),
        .dictionary(keySignature: "v", valueSignature: "s", []),
        .dictionary(keySignature: "s", valueSignature: "v", [DBusDictEntry(key: .string("k"), value: .int32(1))]),
        .structure([]),
    ])
    func invalidValuesAreRejected(_ value: DBusValue) {
        #expect(throws: DBusError.self) { try value.validate() }
        do {
            try value.validate()
        } catch {
            #expect(error.name == DBusError.Name.invalidArgs)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func tooDeepNestingIsRejected() {
        var value = DBusValue.int32(1)
        for _ in 0..<100 { value = .variant(value) }
        #expect(throws: DBusError.self) { try value.validate() }
    }

    @Test func durationsBecomeMilliseconds() {
        #expect(DBusEngine.milliseconds(.seconds(25)) == 25_000)
        #expect(DBusEngine.milliseconds(.microseconds(1)) == 1)
        #expect(DBusEngine.milliseconds(.milliseconds(-5)) == 1)
        #expect(DBusEngine.milliseconds(.seconds(1_000_000_000)) == Int32.max - 1)
    }

    @Test func systemBusHonoursEnvironment() throws {
        #expect(try DBusBusAddress.system.resolve(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/x"]) == "unix:path=/x")
        #expect(try DBusBusAddress.system.resolve(environment: [:]) == DBusBusAddress.defaultSystemAddress)
        #expect(throws: DBusError.self) { try DBusBusAddress.session.resolve(environment: [:]) }
    }
}
