import BlueZ

/// A board's BlueZ device objects, one per adapter that knows it (by adapter path), as BlueZ
/// reports them. A value the board keeps; what a report means for its link is the board's
/// state machine's.
struct BoardDevices {
    private(set) var byAdapter: [AdapterPath: BlueZDevice]

    init(_ devices: [BlueZDevice]) {
        byAdapter = Dictionary(devices.map { ($0.adapterPath, $0) }) { first, _ in first }
    }

    subscript(adapter: AdapterPath) -> BlueZDevice? { byAdapter[adapter] }
    var isEmpty: Bool { byAdapter.isEmpty }
    var all: [BlueZDevice] { Array(byAdapter.values) }

    /// Records BlueZ's report of `device` (its properties `changed`; all of them for a new
    /// object); returns whether it tells the board was heard: a new object, or an
    /// advertisement's properties.
    mutating func report(_ device: BlueZDevice, changed: Set<BlueZDevice.Property>) -> Bool {
        let isNew = byAdapter.updateValue(device, forKey: device.adapterPath) == nil
        return isNew || changed.sayAdvertised
    }

    /// A connect uses `device`, read from BlueZ's objects (its report may not have come yet).
    mutating func connecting(through device: BlueZDevice) {
        if byAdapter[device.adapterPath] == nil { byAdapter[device.adapterPath] = device }
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

    /// The adapter a board's view shows: its link's, else the one that hears it best
    /// (`rssi`, by adapter), else the first known.
    func shown(link: AdapterPath?, rssi: [AdapterPath: Int]) -> AdapterPath? {
        let heard = rssi.filter { byAdapter[$0.key] != nil }.max { $0.value < $1.value }?.key
        return link ?? heard ?? byAdapter.keys.sorted().first
    }

    /// The device that holds a link in `tree`: `adapter`'s when BlueZ shows one there, else
    /// (the link was adopted or moved) any other, kept as BlueZ shows it now.
    mutating func linked(in tree: BlueZObjectTree, preferring adapter: AdapterPath?) -> BlueZDevice? {
        if let adapter, let device = byAdapter[adapter], tree.hasLink(at: device.path) == true { return device }
        for (adapter, known) in byAdapter {
            guard let current = tree.device(at: known.path), current.hasLink else { continue }
            byAdapter[adapter] = current
            return current
        }
        return nil
    }

    /// The services the board's devices offer, as BlueZ shows them in `tree`.
    func offered(in tree: BlueZObjectTree) -> [BluetoothUUID] {
        byAdapter.values.flatMap { tree.device(at: $0.path)?.uuids ?? $0.uuids }
    }
}
