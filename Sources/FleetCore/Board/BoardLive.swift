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
        /// Its adapters: each one's device object, last signal and last hearing of the board.
        var devices = BoardDevices([])
        /// When any adapter last heard it (kept after they forgot it: a call failed tells it).
        var lastSeen: ContinuousClock.Instant?
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

    private let state: Mutex<State>
    private let clock: any RadioClock

    /// A board known to the adapters of `devices` (none: heard by none yet).
    init(clock: any RadioClock, devices: [BlueZDevice] = []) {
        self.clock = clock
        self.state = Mutex(State(devices: BoardDevices(devices)))
    }

    /// Now, by the radio's clock.
    var now: ContinuousClock.Instant { clock.now }

    var current: State { state.withLock { $0 } }

    /// The best signal any adapter reports.
    var rssi: Int? { state.withLock { $0.devices.bestRSSI } }

    /// The board's adapters as they stand now.
    var devices: BoardDevices { state.withLock { $0.devices } }

    /// Changes the board's devices (the board's actor alone: BlueZ's reports, its connect).
    @discardableResult
    func withDevices<T>(_ body: (inout BoardDevices) -> T) -> T {
        state.withLock { body(&$0.devices) }
    }

    /// Records BlueZ's report of one of the board's devices at `now`
    /// (``BoardDevices/report(_:changed:now:)``); whether it tells the board was heard.
    func report(_ device: BlueZDevice, changed: Set<BlueZDevice.Property>, now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            let heard = state.devices.report(device, changed: changed, now: now)
            if heard { state.lastSeen = now }
            return heard
        }
    }

    var temperature: SensorReading? { state.withLock { $0.temperature } }

    func reading(_ sensor: String) -> SensorReading? { state.withLock { $0.readings[sensor] } }

    /// A sensor value arrived (for a call waiting for a sensor the board only notifies).
    let readingArrived = ChangeSignal()

    func setReading(_ reading: SensorReading, of sensor: String) {
        state.withLock { $0.readings[sensor] = reading }
        readingArrived.notify()
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

    /// Records an advertisement through `adapter`, where it arrives (an absent board, which
    /// waits for one, is told by the fleet); one through an adapter whose device object the
    /// board was not told of yet is told by that report.
    func advertised(rssi: Int?, adapter: AdapterPath) {
        state.withLock { state in
            let now = clock.now
            if state.devices.advertised(rssi: rssi, through: adapter, at: now) { state.lastSeen = now }
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
