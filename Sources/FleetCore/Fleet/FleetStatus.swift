/// The fleet's overall state, as `daemon.status` and sd-notify's `STATUS=` report it.
public struct FleetStatus: Sendable, Hashable {
    /// One adapter the fleet uses (or was told to use and does not see).
    public struct Adapter: Sendable, Hashable {
        /// `hci0`, or the name or address configured when BlueZ does not show it.
        public var name: String
        public var address: String?
        public var present: Bool
        public var powered: Bool
        public var discovering: Bool
        /// The fleet's boards linked (or being linked) through it.
        public var boards: [BoardAddress]
        public var links: Int { boards.count }
        /// Most links at once (`connection-limit`).
        public var limit: Int
        /// Whether its controller works.
        public var health: AdapterCondition
        /// Its last recovery from being stuck, if any.
        public var lastRecovery: AdapterHealth.Recovery?

        public init(
            name: String, address: String?, present: Bool, powered: Bool, discovering: Bool, boards: [BoardAddress], limit: Int,
            health: AdapterCondition = .ok, lastRecovery: AdapterHealth.Recovery? = nil
        ) {
            self.health = health
            self.lastRecovery = lastRecovery
            self.name = name
            self.address = address
            self.present = present
            self.powered = powered
            self.discovering = discovering
            self.boards = boards
            self.limit = limit
        }
    }

    /// Every adapter in use, in name order.
    public var adapters: [Adapter]
    public var bluezAvailable: Bool
    public var boardCount: Int
    public var readyCount: Int
    /// Boards holding a link (resolving, ready or disconnecting).
    public var connectedCount: Int

    /// The adapters asked for, as configured (`hci0`, `hci0, hci1`, `all`).
    public var adapterSelection: String

    /// Whether at least one adapter is there and powered.
    public var adapterPowered: Bool { adapters.contains { $0.present && $0.powered } }
    public var adapterPresent: Bool { adapters.contains(where: \.present) }
    public var discovering: Bool { adapters.contains(where: \.discovering) }

    /// One line: "4/5 boards ready, adapter hci0 on" (or "adapters hci0 on, hci1 off").
    public var summary: String {
        let adapter: String
        if !bluezAvailable {
            adapter = "BlueZ not running"
        } else if adapters.isEmpty {
            adapter = "adapter \(adapterSelection) missing"
        } else {
            let each = adapters.map { "\($0.name) \($0.present ? ($0.powered ? "on" : "off") : "missing")" }
            adapter = (adapters.count == 1 ? "adapter " : "adapters ") + each.joined(separator: ", ")
        }
        return "\(readyCount)/\(boardCount) boards ready, \(adapter)"
    }
}
