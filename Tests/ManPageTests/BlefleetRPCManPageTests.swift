import FleetRPC
import Foundation
import JSONRPC
import Testing

/// blefleet-rpc(7) against the method catalogue the daemon enforces and publishes.
@Suite("man/blefleet-rpc.7")
struct BlefleetRPCManPageTests {
    static let methods = FleetMethods.descriptors + [FleetMethods.Discover.descriptor]
    static let methodNames = methods.map(\.name)

    static func descriptor(_ name: String) -> RPCMethodDescriptor {
        methods.first { $0.name == name }!
    }

    /// A method's subsection: `.Ss name Pq access` up to the next subsection or section.
    static func subsection(of page: ManPage, method: String) -> (heading: Substring, body: [Substring])? {
        guard let heading = page.lines.first(where: { $0 == ".Ss \(method)" || $0.hasPrefix(".Ss \(method) ") }),
            let body = page.chunk(startingAt: { $0 == heading }, endingAt: { $0.hasPrefix(".Ss ") || $0.hasPrefix(".Sh ") })
        else { return nil }
        return (heading, body)
    }

    @Test("Every method has a subsection saying whether it reads or writes", arguments: methodNames)
    func methodIsDocumented(name: String) throws {
        let method = Self.descriptor(name)
        let page = try ManPage("blefleet-rpc.7")
        let section = try #require(Self.subsection(of: page, method: method.name), "\(method.name) has no .Ss")
        #expect(section.heading == ".Ss \(method.name) Pq \(method.access.rawValue)")
        #expect(page.rendered.contains("\(method.name) (\(method.access.rawValue))"))
    }

    @Test("Every method's parameters are listed in positional order, of their type, required or optional", arguments: methodNames)
    func parameters(name: String) throws {
        let method = Self.descriptor(name)
        let page = try ManPage("blefleet-rpc.7")
        let body = try #require(Self.subsection(of: page, method: method.name)).body
        // `.It Li name Pq type , required`
        let documented = body.compactMap { line -> (name: String, type: String, required: Bool)? in
            let words = line.split(separator: " ")
            guard words.count >= 5, words[0] == ".It", words[1] == "Li", words[3] == "Pq" else { return nil }
            return (String(words[2]), words[4...].prefix { $0 != "," }.joined(separator: " "), words.contains("required"))
        }
        #expect(documented.map(\.name) == method.params.map(\.name))
        for (doc, param) in zip(documented, method.params) {
            #expect(doc.required == param.required, "\(method.name) \(param.name): required is \(param.required)")
            #expect(doc.type == Self.words(param.type), "\(method.name) \(param.name)")
        }
    }

    /// A parameter type as the page names it: `integer`, `Vt uuid`, `array of strings`.
    static func words(_ type: RPCValueType) -> String {
        switch type {
        case .string: "string"
        case .integer: "integer"
        case .number: "number"
        case .boolean: "boolean"
        case .any: "any"
        case .custom(let custom): "Vt \(custom.name)"
        case .array(of: .string): "array of strings"
        case .array(let element): "array of \(words(element))"
        }
    }

    @Test("Every method lists exactly the error codes it may answer with", arguments: methodNames)
    func errors(name: String) throws {
        let method = Self.descriptor(name)
        let page = try ManPage("blefleet-rpc.7")
        let body = try #require(Self.subsection(of: page, method: method.name)).body
        let text = body.drop { !$0.hasPrefix("Errors:") }.joined(separator: " ")
        let codes = text.split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Int($0) }
        #expect(Set(codes) == Set(method.errors.map(\.rawValue)), "\(method.name)")
    }

    @Test("The error code table holds every code with its name, and nothing else")
    func errorCodeTable() throws {
        let page = try ManPage("blefleet-rpc.7")
        let rows = try #require(page.section("ERROR CODES")).compactMap { line -> (Int, String)? in
            let cells = line.dropFirst(4).components(separatedBy: " Ta ")
            guard line.hasPrefix(".It "), cells.count == 3, let code = Int(cells[0]) else { return nil }
            return (code, cells[1])
        }
        let expected = RPCErrorCode.allCases.map { ($0.rawValue, String(describing: $0)) }
        #expect(rows.map(\.0) == expected.map(\.0))
        #expect(rows.map(\.1) == expected.map(\.1))
    }

    @Test("The board error code table holds every code, and nothing else")
    func boardErrorCodeTable() throws {
        let page = try ManPage("blefleet-rpc.7")
        let codes = try #require(page.section("BOARD ERROR CODES")).compactMap { line -> String? in
            let cells = line.dropFirst(4).components(separatedBy: " Ta ")
            guard line.hasPrefix(".It "), cells.count == 3, ["yes", "no"].contains(cells[1]) else { return nil }
            return cells[0]
        }
        #expect(codes == FleetErrorCode.allCases.map(\.rawValue))
    }

    @Test("Every event topic and the notification method are described")
    func notifications() throws {
        let page = try ManPage("blefleet-rpc.7")
        let section = try #require(page.section("NOTIFICATIONS"))
        let topics = section.compactMap { line -> String? in
            let words = line.split(separator: " ")
            return words.count == 3 && words[0] == ".It" && words[1] == "Li" ? String(words[2]) : nil
        }
        #expect(topics == EventTopic.allCases.map(\.rawValue))
        #expect(section.joined().contains(#""method":"\#(EventNotification.method)""#))
        let subscribe = try #require(Self.subsection(of: page, method: FleetMethods.EventsSubscribe.descriptor.name)).body
        for topic in EventTopic.allCases {
            #expect(subscribe.contains { $0.contains(topic.rawValue) }, "\(topic) missing from events.subscribe")
        }
    }

    @Test("Every event data the page shows is one the clients read, and every topic shows one")
    func eventData() throws {
        let page = try ManPage("blefleet-rpc.7")
        let section = try #require(page.section("NOTIFICATIONS"))
        var topic: EventTopic?
        var shown: Set<EventTopic> = []
        for line in section {
            let words = line.split(separator: " ")
            if words.count == 3, words[0] == ".It", words[1] == "Li" {
                topic = EventTopic(rawValue: String(words[2]))
            } else if line == ".El" {
                topic = nil
            } else if let topic, line.hasPrefix(".Li {"), let end = line.lastIndex(of: "}") {
                let text = line[line.index(line.startIndex, offsetBy: 4)...end].replacingOccurrences(of: "\\(dq", with: "\"")
                let data = try JSONValue(parsing: text)
                #expect(EventDetail(topic: topic, data: data)?.data == data, "\(topic): \(text)")
                shown.insert(topic)
            }
        }
        #expect(shown == Set(EventTopic.allCases))
    }

    @Test("Every notification is shown, and each shown is its type's, with no member it lacks")
    func notificationShapes() throws {
        let page = try ManPage("blefleet-rpc.7")
        var shown: Set<String> = []
        for block in ManPage.literalBlocks(try #require(page.section("NOTIFICATIONS"))) {
            let message = try JSONValue(parsing: block)
            guard let method = message["method"]?.stringValue, let params = message["params"] else { continue }
            guard let type = FleetMethods.notifications.first(where: { $0.method == method }) else { continue }
            shown.insert(method)
            let fields = Set(try RPCShape.fields(of: type).map(\.name))
            let members = Set(params.objectValue?.keys.map { $0 } ?? [])
            #expect(members.isSubset(of: fields), "\(method): \(members.subtracting(fields).sorted()) is no member of \(type)")
            #expect(throws: Never.self, "\(method)") { _ = try JSONCodec.decode(type, from: JSONCodec.encode(params)) }
        }
        // device.value and device.disconnected are told in the text: their members are listed.
        for (type, listed) in [(DeviceValueNotification.self as any FleetNotification.Type, "address handle value time"),
                               (DeviceDisconnectedNotification.self, "address reason")] {
            let required = try RPCShape.fields(of: type).filter(\.required).map(\.name)
            #expect(required.joined(separator: " ") == listed, "\(type.method)")
            #expect(page.rendered.contains(type.method))
            shown.insert(type.method)
        }
        #expect(shown == Set(FleetMethods.notifications.map { $0.method }))
    }

    @Test("The states a board can be in are the wire's")
    func boardStates() throws {
        let page = try ManPage("blefleet-rpc.7")
        let types = try #require(page.section("TYPES"))
        let states = types.drop { !$0.hasPrefix(".It Li state") }.dropFirst().prefix { $0 != ".El" }
            .compactMap { line -> String? in
                let words = line.split(separator: " ")
                return words.count == 3 && words[0] == ".It" && words[1] == "Li" ? String(words[2]) : nil
            }
        #expect(states == BoardPhase.allCases.map(\.rawValue))
    }

    @Test("The framing states the real limits: frame size, nesting depth, calls in flight")
    func limits() throws {
        let page = try ManPage("blefleet-rpc.7")
        #expect(page.rendered.contains("nested deeper than \(JSONValue.maximumDepth) arrays or objects"))
        #expect(page.rendered.contains("-\(-RPCErrorCode.frameTooLarge.rawValue) and id null, then closes the connection"))
        #expect(page.rendered.contains("OpenRPC \(OpenRPCDocument.version)"))
    }

    @Test("The one-line socat examples are valid requests of catalogue methods with valid params")
    func examplesAreValidRequests() throws {
        let page = try ManPage("blefleet-rpc.7")
        let blocks = ManPage.literalBlocks(try #require(page.section("EXAMPLES")) + (page.section("SYNOPSIS") ?? []))
        var checked = 0
        for block in blocks {
            for line in block.split(separator: "\n") {
                guard let start = line.range(of: "echo '"), let end = line.range(of: "'", options: .backwards),
                    start.upperBound < end.lowerBound
                else { continue }
                let json = line[start.upperBound..<end.lowerBound]
                let items: [RPCIncoming.Item]
                switch RPCIncoming(parsing: Array(json.utf8)) {
                case .single(let item): items = [item]
                case .batch(let batch): items = batch
                case .refused(let error): Issue.record("\(json): \(error)"); continue
                }
                for item in items {
                    guard case .request(let request) = item else {
                        Issue.record("\(json) is not a valid request")
                        continue
                    }
                    let method = try #require(Self.methods.first { $0.name == request.method }, "\(request.method)")
                    #expect(throws: Never.self, "\(json)") { try method.validate(request.params) }
                    checked += 1
                }
            }
        }
        #expect(checked >= 6)
    }

    @Test("mandoc -Tlint finds nothing but references to pages not installed")
    func lint() throws {
        #expect(try ManPage("blefleet-rpc.7").lintProblems() == [])
    }
}
