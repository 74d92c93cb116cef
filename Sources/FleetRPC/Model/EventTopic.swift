/// Topics of the events a client can subscribe to with `events.subscribe`.
public enum EventTopic: String, Sendable, Hashable, Codable, CaseIterable {
    /// A board appeared, disappeared, or changed state, name, alias or RSSI.
    case boards
    /// A board sent a new temperature.
    case temperature
    /// A board's LED was switched.
    case led
    /// The adapter was powered on or off, or BlueZ came or went.
    case adapter
    /// A board sent a new value of a sensor of its profile other than the temperature
    /// (which has its own topic).
    case sensor
}
