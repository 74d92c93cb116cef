import BlueZ

/// A board's adapters, one map: for each adapter that knows the board (BlueZ has a device
/// object for it there), that device object as BlueZ reports it, the signal the adapter last
/// reported and when it last heard the board advertise. An adapter that no longer knows the
/// board takes all three with it. A value, kept in ``BoardLive`` (advertisements are recorded
/// where they arrive, on the mirror); its devices change on the board's actor alone, and what
/// each adapter heard of a device it knows also on the mirror. What a report means for the
/// link is the board's state machine's.
struct BoardDevices: Sendable {
    /// What one adapter knows of the board.
    struct Known: Sendable {
        var device: BlueZDevice
        /// The last signal the adapter reported, dBm (kept when BlueZ invalidates RSSI at the
        /// end of a discovery: placement still needs it).
        var rssi: Int?
        /// When it last heard the board advertise (its health: is it still hearing?).
        var heardAt: ContinuousClock.Instant?
    }

    private(set) var byAdapter: [AdapterPath: Known]

    init(_ devices: [BlueZDevice]) {
        byAdapter = Dictionary(devices.map { ($0.adapterPath, Known(device: $0, rssi: $0.rssi.map(Int.init))) }) { first, _ in first }
    }

    subscript(adapter: AdapterPath) -> BlueZDevice? { byAdapter[adapter]?.device }
    var isEmpty: Bool { byAdapter.isEmpty }
    var all: [BlueZDevice] { byAdapter.values.map(\.device) }

    /// The last signal each adapter that knows the board reported, dBm.
    var rssi: [AdapterPath: Int] { byAdapter.compactMapValues(\.rssi) }
    /// The best of them.
    var bestRSSI: Int? { byAdapter.values.compactMap(\.rssi).max() }
    /// When each adapter that knows the board last heard it.
    var heardAt: [AdapterPath: ContinuousClock.Instant] { byAdapter.compactMapValues(\.heardAt) }

    /// Records BlueZ's report of `device` (its properties `changed`; all of them for a new
    /// object) at `now`; returns whether it tells the board was heard: a new object, or an
    /// advertisement's properties. The RSSI it shows is kept either way: after another
    /// change (a link up or down) it is the last one heard, no new sighting (the adapter may
    /// be off by now).
    mutating func report(_ device: BlueZDevice, changed: Set<BlueZDevice.Property>, now: ContinuousClock.Instant) -> Bool {
        let known = byAdapter[device.adapterPath]
        let heard = known == nil || changed.sayAdvertised
        byAdapter[device.adapterPath] = Known(
            device: device, rssi: device.rssi.map(Int.init) ?? known?.rssi, heardAt: heard ? now : known?.heardAt)
        return heard
    }

    /// An advertisement of the board through `adapter` (recorded on the mirror: its device
    /// object unchanged); whether that adapter knows the board. One that does not yet is
    /// told by its device's report, which counts as heard.
    mutating func advertised(rssi: Int?, through adapter: AdapterPath, at now: ContinuousClock.Instant) -> Bool {
        guard byAdapter[adapter] != nil else { return false }
        if let rssi { byAdapter[adapter]?.rssi = rssi }
        byAdapter[adapter]?.heardAt = now
        return true
    }

    /// A connect uses `device`, read from BlueZ's objects (its report may not have come yet).
    mutating func connecting(through device: BlueZDevice) {
        if byAdapter[device.adapterPath] == nil { byAdapter[device.adapterPath] = Known(device: device, rssi: device.rssi.map(Int.init)) }
    }

    /// What BlueZ's report of `device` says of the board's link through `linkAdapter`.
    enum LinkReport: Equatable {
        /// Its link is up (adopted, when the board had none), resolved or not.
        case up(resolved: Bool)
        case down
        /// A second link to the board, through another adapter.
        case stray
    }

    /// What a report of `device` (its properties `changed`) says of the board's link through
    /// `linkAdapter`; nil when it says nothing of it. The link is up while `Connected` or
    /// `ServicesResolved` (bluetoothd may set only the latter), usable once resolved. Only
    /// the device of the board's link counts; a link someone else made through any adapter
    /// is adopted when the board has none.
    static func link(of device: BlueZDevice, changed: Set<BlueZDevice.Property>, linkAdapter: AdapterPath?) -> LinkReport? {
        guard changed.sayLink else { return nil }
        guard let linkAdapter, device.adapterPath != linkAdapter else {
            return device.hasLink ? .up(resolved: device.servicesResolved) : (linkAdapter == nil ? nil : .down)
        }
        return device.hasLink ? .stray : nil
    }

    /// Forgets the device on `adapter`; whether there was one.
    mutating func remove(adapter: AdapterPath) -> Bool {
        byAdapter.removeValue(forKey: adapter) != nil
    }

    /// Forgets every device; whether there was any.
    mutating func removeAll() -> Bool {
        defer { byAdapter = [:] }
        return !byAdapter.isEmpty
    }

    /// The adapters that know the board and are not among `present`.
    func adapters(notIn present: Set<AdapterPath>) -> [AdapterPath] {
        byAdapter.keys.filter { !present.contains($0) }
    }

    /// Whether an adapter other than `adapter` knows the board.
    func known(besides adapter: AdapterPath) -> Bool {
        byAdapter.keys.contains { $0 != adapter }
    }

    /// The adapters that know the board, in path order.
    var adapters: [AdapterPath] { byAdapter.keys.sorted() }

    /// The adapter a board's view shows: its link's, else the one that hears it best, else
    /// the first known.
    func shown(link: AdapterPath?) -> AdapterPath? {
        let heard = rssi.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
        return link ?? heard ?? byAdapter.keys.sorted().first
    }

    /// The device that holds a link in `tree`: `adapter`'s when BlueZ shows one there, else
    /// (the link was adopted or moved) any other, kept as BlueZ shows it now.
    mutating func linked(in tree: BlueZObjectTree, preferring adapter: AdapterPath?) -> BlueZDevice? {
        if let adapter, let device = byAdapter[adapter]?.device, tree.hasLink(at: device.path) == true { return device }
        for (adapter, known) in byAdapter {
            guard let current = tree.device(at: known.device.path), current.hasLink else { continue }
            byAdapter[adapter]?.device = current
            return current
        }
        return nil
    }

    /// The services the board's devices offer, as BlueZ shows them in `tree`.
    func offered(in tree: BlueZObjectTree) -> [BluetoothUUID] {
        byAdapter.values.flatMap { tree.device(at: $0.device.path)?.uuids ?? $0.device.uuids }
    }
}
