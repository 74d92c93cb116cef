/// The fleet's overall state, as `daemon.status` and sd-notify's `STATUS=` report it.
public struct FleetStatus: Sendable, Hashable {
    /// The adapter asked for (`hci0` or an address).
    public var adapterName: String
    /// The adapter's address, while BlueZ shows it.
    public var adapterAddress: String?
    public var adapterPresent: Bool
    public var adapterPowered: Bool
    public var bluezAvailable: Bool
    public var discovering: Bool
    public var boardCount: Int
    public var readyCount: Int
    /// Boards holding a link (resolving, ready or disconnecting).
    public var connectedCount: Int

    /// One line: "4/5 boards ready, adapter hci0 on".
    public var summary: String {
        let adapter: String
        if !bluezAvailable {
            adapter = "BlueZ not running"
        } else if !adapterPresent {
            adapter = "adapter \(adapterName) missing"
        } else {
            adapter = "adapter \(adapterName) \(adapterPowered ? "on" : "off")"
        }
        return "\(readyCount)/\(boardCount) boards ready, \(adapter)"
    }
}
