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
            address: board.address, name: board.name ?? "", alias: board.alias, state: board.phase,
            rssi: board.rssi, led: board.appliedLED, desiredLed: desired,
            temperature: board.temperature.map { TemperatureReading(value: $0.celsius, age: $0.age(at: now)) },
            lastSeen: board.lastSeen.map { Wire.wallClock($0, now: now) }, adapter: board.adapter,
            profile: board.profile.name,
            sensors: Dictionary(uniqueKeysWithValues: board.profile.sensors.map { sensor in
                let reading = board.readings[sensor.name]
                return (
                    sensor.name,
                    SensorInfo(
                        value: reading?.value, unit: sensor.unit, ageMs: reading.map { $0.age(at: now).wholeMilliseconds },
                        deviceClass: sensor.deviceClass, decimals: sensor.decimals)
                )
            }))
    }
}

/// How instants are written on the wire.
public enum Wire {
    /// A monotonic instant as an ISO 8601 wall-clock time.
    public static func wallClock(_ instant: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) -> String {
        let age = instant.duration(to: now)
        let date = Date().addingTimeInterval(-Double(age.wholeMilliseconds) / 1000)
        return date.formatted(.iso8601)
    }
}
