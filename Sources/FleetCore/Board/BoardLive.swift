import BlueZ
import Logging
import Synchronization

/// What a board learns from its steady radio traffic — advertisements (RSSI) and notified
/// sensor values — kept outside the ``Board`` actor, so that this traffic is recorded where
/// it arrives (on the BlueZ mirror) without waking the board: 20 connected boards send
/// about 40 such signals a second, and a hand-off per signal would be most of the
/// daemon's idle CPU.
final class BoardLive: Sendable {
    struct State: Sendable {
        /// Name and alias, for selections resolved without a hop to the board's actor.
        var name: String?
        var alias: String?
        /// The last signal each adapter reported, dBm, by adapter path (kept when BlueZ
        /// invalidates RSSI at the end of a discovery: placement still needs it).
        var rssiByAdapter: [AdapterPath: Int] = [:]
        var lastSeen: ContinuousClock.Instant?
        /// When each adapter last reported it, by adapter path (its health: is it still hearing?).
        var heardAt: [AdapterPath: ContinuousClock.Instant] = [:]
        /// The latest reading of each sensor, by sensor name.
        var readings: [String: SensorReading] = [:]
        /// The temperature (the reading of the sensor `temperature`), in whole degrees.
        var temperature: SensorReading? { readings[BoardProfile.temperatureSensor] }
        /// What its link last carried (a notification), for its adapter's health.
        var carried: Carried?
    }

    /// A notification that came over the board's link: through which adapter, when, and how
    /// long after the one before it on the same link (nil for the first).
    struct Carried: Sendable, Hashable {
        var adapter: AdapterPath
        var at: ContinuousClock.Instant
        var gap: Duration?
    }

    private let state = Mutex(State())
    private let clock: any RadioClock

    init(clock: any RadioClock) {
        self.clock = clock
    }

    /// Now, by the radio's clock.
    var now: ContinuousClock.Instant { clock.now }

    var current: State { state.withLock { $0 } }

    /// The best signal any adapter reports.
    var rssi: Int? { state.withLock { $0.rssiByAdapter.values.max() } }

    var temperature: SensorReading? { state.withLock { $0.temperature } }

    func reading(_ sensor: String) -> SensorReading? { state.withLock { $0.readings[sensor] } }

    func setNames(name: String?, alias: String?) {
        state.withLock {
            $0.name = name
            $0.alias = alias
        }
    }

    func setAlias(_ alias: String?) {
        state.withLock { $0.alias = alias }
    }

    /// A sensor value arrived (for a call waiting for a sensor the board only notifies).
    let readingArrived = ChangeSignal()

    func setReading(_ reading: SensorReading, of sensor: String) {
        state.withLock { $0.readings[sensor] = reading }
        readingArrived.notify()
    }

    /// The adapter no longer knows the board (its device object went).
    func forget(adapter: AdapterPath) {
        state.withLock {
            _ = $0.rssiByAdapter.removeValue(forKey: adapter)
            _ = $0.heardAt.removeValue(forKey: adapter)
        }
    }

    func forgetAllAdapters() {
        state.withLock {
            $0.rssiByAdapter = [:]
            $0.heardAt = [:]
        }
    }

    /// A notification came over the board's link through `adapter`.
    func carried(through adapter: AdapterPath) {
        state.withLock { state in
            let now = clock.now
            let gap = state.carried.flatMap { $0.adapter == adapter ? $0.at.duration(to: now) : nil }
            state.carried = Carried(adapter: adapter, at: now, gap: gap)
        }
    }

    /// The board's link came or went: what an earlier link carried says nothing of the next.
    func linkChanged() {
        state.withLock { $0.carried = nil }
    }

    /// Keeps the signal `adapter` last reported, without counting it as heard now.
    func keepRSSI(_ rssi: Int, adapter: AdapterPath) {
        state.withLock { $0.rssiByAdapter[adapter] = rssi }
    }

    /// Records an advertisement (an absent board, which waits for one, is told by the fleet).
    func advertised(rssi: Int?, adapter: AdapterPath) {
        state.withLock { state in
            if let rssi { state.rssiByAdapter[adapter] = rssi }
            let now = clock.now
            state.lastSeen = now
            state.heardAt[adapter] = now
        }
    }

    /// Records a sensor's value (from a read, or a notification) and tells the fleet's
    /// events; nil, and a warning, when the bytes do not fit the sensor's format.
    @discardableResult
    func record(
        _ bytes: [UInt8], of sensor: BoardProfile.Characteristic, events: EventBroadcaster<FleetEvent>,
        address: BoardAddress, logger: Logger
    ) -> SensorReading? {
        guard let value = sensor.decode(bytes) else {
            logger.warning(
                "ignored a \(sensor.name) value that does not fit its format",
                metadata: ["bytes": "\(bytes.count)", "format": "\(sensor.format.rawValue)"])
            return nil
        }
        let reading = SensorReading(value: value, receivedAt: now)
        setReading(reading, of: sensor.name)
        if sensor.name == BoardProfile.temperatureSensor {
            events.publish(.temperature(address, reading.celsius))
        } else {
            events.publish(.sensor(address, name: sensor.name, value: value, unit: sensor.unit))
        }
        return reading
    }
}
