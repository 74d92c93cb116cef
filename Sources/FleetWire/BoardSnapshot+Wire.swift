public import FleetCore
public import FleetRPC
import Foundation

extension BoardInfo {
    /// A board as `boards.list` (and the MQTT bridge's `state` topic) reports it.
    public init(_ board: BoardSnapshot, now: ContinuousClock.Instant = .now) {
        let desired: Bool? =
            switch board.desiredLED {
            case .on: true
            case .off: false
            case .unknown: nil
            }
        self.init(
            address: board.address.rawValue, name: board.name ?? "", alias: board.alias, state: BoardState(board.phase),
            rssi: board.rssi, led: board.appliedLED, desiredLed: desired,
            temperature: board.temperature.map {
                TemperatureReading(celsius: $0.value.degrees, ageMs: Wire.milliseconds($0.age(at: now)))
            },
            lastSeen: board.lastSeen.map { Wire.wallClock($0, now: now) }, adapter: board.adapter,
            profile: board.profile.name,
            sensors: Dictionary(uniqueKeysWithValues: board.profile.sensors.map { sensor in
                let reading = board.readings[sensor.name]
                return (
                    sensor.name,
                    SensorInfo(
                        value: reading?.value, unit: sensor.unit, ageMs: reading.map { Wire.milliseconds($0.age(at: now)) })
                )
            }))
    }
}

/// How durations and instants are written on the wire.
public enum Wire {
    /// Whole milliseconds (truncated).
    public static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    /// A monotonic instant as an ISO 8601 wall-clock time.
    public static func wallClock(_ instant: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) -> String {
        let age = instant.duration(to: now)
        let date = Date().addingTimeInterval(-Double(milliseconds(age)) / 1000)
        return date.formatted(.iso8601)
    }
}
