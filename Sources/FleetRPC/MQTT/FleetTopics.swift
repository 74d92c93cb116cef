/// The MQTT topics of blefleet (`blefleet-mqtt(7)`), for the daemon's bridge and for
/// `blectl --broker`. Fixed names: other tools subscribe to them.
///
///     <prefix>/<gateway>/status                 online | offline (retained; offline is the will)
///     <prefix>/<gateway>/<board>/availability   online | offline (retained)
///     <prefix>/<gateway>/<board>/led            ON | OFF (retained)
///     <prefix>/<gateway>/<board>/led/set        ON | OFF (command)
///     <prefix>/<gateway>/<board>/temperature    whole °C (retained)
///     <prefix>/<gateway>/<board>/<sensor>       any other sensor of its profile, scaled (retained)
///     <prefix>/<gateway>/<board>/state          the board as boards.list gives it (JSON, retained)
///     <prefix>/all/led/set                      {"on": true, "request": "<id>", "timeoutMs": 5000}
///     <prefix>/<gateway>/all/led/set            the same, for one gateway
///     <prefix>/<gateway>/result/<id>            that gateway's led.set result for request <id>
///
/// `<board>` is the board's address in lower-case hex without colons (`f00d00000001`).
public struct FleetTopics: Sendable, Hashable {
    public let prefix: String

    public init(prefix: String = "blefleet") {
        self.prefix = prefix
    }

    /// The topic segment of a board: `F0:0D:00:00:00:01` → `f00d00000001`.
    public static func boardID(_ address: String) -> String {
        address.lowercased().filter { $0 != ":" }
    }

    /// The address of a topic segment made by ``boardID(_:)``, or nil if it is not one.
    public static func address(ofBoardID id: String) -> String? {
        guard id.count == 12, id.allSatisfy(\.isHexDigit) else { return nil }
        let upper = Array(id.uppercased())
        return stride(from: 0, to: 12, by: 2).map { String(upper[$0..<$0 + 2]) }.joined(separator: ":")
    }

    /// Whether `name` can be a topic level of its own (a gateway name, a request id).
    public static func isValidLevel(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 128
            && !name.contains { $0 == "/" || $0 == "+" || $0 == "#" || $0 == "\0" }
    }

    public func status(_ gateway: String) -> String { "\(prefix)/\(gateway)/status" }
    public func board(_ gateway: String, _ address: String) -> String {
        "\(prefix)/\(gateway)/\(Self.boardID(address))"
    }
    public func availability(_ gateway: String, _ address: String) -> String { board(gateway, address) + "/availability" }
    public func led(_ gateway: String, _ address: String) -> String { board(gateway, address) + "/led" }
    public func ledSet(_ gateway: String, _ address: String) -> String { board(gateway, address) + "/led/set" }
    public func temperature(_ gateway: String, _ address: String) -> String { board(gateway, address) + "/temperature" }
    /// A sensor of the board's profile: `…/f00d00000001/humidity`.
    public func sensor(_ gateway: String, _ address: String, _ sensor: String) -> String {
        board(gateway, address) + "/" + sensor
    }
    /// Names a sensor cannot have: the board's other topics.
    public static let reservedLevels: Set<String> = ["availability", "led", "state", "status", "result", "all"]
    public func state(_ gateway: String, _ address: String) -> String { board(gateway, address) + "/state" }
    /// Fleet-wide LED commands: every gateway (`gateway` nil) or one.
    public func allLEDSet(_ gateway: String? = nil) -> String {
        gateway.map { "\(prefix)/\($0)/all/led/set" } ?? "\(prefix)/all/led/set"
    }
    public func result(_ gateway: String, _ request: String) -> String { "\(prefix)/\(gateway)/result/\(request)" }
}
