/// Something that happened in the fleet, for subscribers (RPC `subscribe`, logs).
public enum FleetEvent: Sendable, Hashable {
    /// A board moved from one phase to another.
    case boardPhaseChanged(BoardAddress, from: BoardPhase, to: BoardPhase)
    /// A temperature reading arrived (read or notification).
    case temperature(BoardAddress, Celsius)
    /// A value of a sensor other than the temperature arrived (read or notification),
    /// scaled as the board's profile says.
    case sensor(BoardAddress, name: String, value: Double, unit: String?)
    /// The LED was written successfully.
    case ledApplied(BoardAddress, on: Bool)
    /// The adapter was powered on or off (or vanished: `powered == false`).
    case adapterPowered(Bool)
    /// A board was adopted.
    case boardAdded(BoardAddress, name: String?)
    /// A board was forgotten.
    case boardRemoved(BoardAddress)
    /// A board was given an alias, or its alias was removed (`nil`).
    case boardAliased(BoardAddress, alias: String?)
}
