import BlueZ
import Logging

/// Keeps the fleet in step with BlueZ: runs the BlueZ mirror, takes the adapters it shows
/// that the selection names (``refreshAdapters()``), adopts the boards that advertise a
/// profile's service, and feeds every board the changes of its devices, of the adapters and
/// of BlueZ itself, in BlueZ's order. It alone adds boards and adapters to the fleet's
/// ``FleetContext`` (``Fleet/forget(_:)`` removes a board through it); ``Fleet`` runs it.
actor FleetMirror {
    let context: FleetContext
    let registry: Registry
    let sightings: Sightings
    let logger: Logger
    var client: BlueZClient { context.client }
    var tally: FleetTally { context.tally }

    /// The boards (the context keeps them; this mirror alone adds them).
    private(set) var boards: [BoardAddress: Board] {
        get { context.boards }
        set {
            context.boards = newValue
            refreshPathIndex()
        }
    }
    /// The board of each device object BlueZ shows, by path.
    private var devicePaths: [DevicePath: BoardAddress] = [:] {
        didSet { refreshPathIndex() }
    }
    /// Boards being adopted (the mirror waits on the registry meanwhile), and whether their
    /// device changed meanwhile: such a change starts no second adoption; the adoption
    /// reads the device again instead of giving the board what it saw before the wait.
    private var adopting: [BoardAddress: Bool] = [:]
    /// `devicePaths` to the boards, for advertisements recorded on the mirror.
    private nonisolated let pathIndex = DevicePathIndex()
    /// The adapters in use (shown by BlueZ and named by the selection), by object path
    /// (the context keeps them; this mirror alone adds and removes them).
    private(set) var adapters: [AdapterPath: FleetAdapter] {
        get { context.adapters }
        set { context.adapters = newValue }
    }
    var anyAdapterPowered: Bool { adapters.values.contains { $0.adapter.powered } }
    /// Whether BlueZ is on the bus: the tally's, which `status` reads.
    private var bluezAvailable: Bool {
        get { tally.bluezAvailable }
        set { tally.bluezChanged(available: newValue) }
    }
    /// Whether BlueZ is loaded and the boards are in step with it.
    private var synchronised = false
    private var loadWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    private var nextLoadWaiter: UInt64 = 0

    init(context: FleetContext, registry: Registry, sightings: Sightings, logger: Logger) {
        self.context = context
        self.registry = registry
        self.sightings = sightings
        self.logger = logger
    }

    /// Keeps the fleet in step with BlueZ until cancelled. Throws when the bus is lost.
    func run() async throws {
        // Only what the fleet acts on: characteristic values (the steady notification
        // traffic) go straight to their boards and never wake this loop, and neither do the
        // advertisements of boards that do not wait for one (recorded on the mirror).
        let (mirrorEvents, forward) = AsyncStream.makeStream(of: BlueZMirrorEvent.self)
        // A board that is absent waits for an advertisement: that one goes to the board itself.
        let pathIndex = self.pathIndex
        let tally = self.tally
        let observation = await client.mirror.observe(interfaces: [BlueZInterfaces.adapter, BlueZInterfaces.device]) {
            event in
            if let advertisement = event.advertisement, let board = pathIndex.board(at: advertisement.path),
                tally.phase(of: board.address) != .absent
            {
                board.live.advertised(rssi: advertisement.rssi.map(Int.init), adapter: advertisement.path.adapter)
                return
            }
            forward.yield(event)
        }
        defer { observation.cancel() }
        for record in await registry.boards where boards[record.address] == nil {
            boards[record.address] = Board(record: record, devices: [], adapterPowered: false, context: context, registry: registry)
        }
        logger.info(
            "fleet starting", metadata: ["fleet.known": "\(boards.count)", "ble.adapters": "\(context.adapterSelection)"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            let client = self.client
            group.addTask { try await client.run() }
            for await event in mirrorEvents {
                await handle(event)
            }
            try await group.next()
        }
    }

    /// Waits until BlueZ's objects are loaded and the fleet is in step with them (so a call
    /// made now sees BlueZ); false if that did not happen within `timeout`.
    func waitUntilLoaded(timeout: Duration) async -> Bool {
        if synchronised { return true }
        nextLoadWaiter &+= 1
        let id = nextLoadWaiter
        let timer = Task { [weak self, clock = client.clock] in
            guard (try? await clock.sleep(for: timeout)) != nil else { return }
            await self?.resumeLoadWaiter(id, loaded: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            loadWaiters[id] = continuation
        }
    }

    private func resumeLoadWaiter(_ id: UInt64, loaded: Bool) {
        loadWaiters.removeValue(forKey: id)?.resume(returning: loaded)
    }

    /// The fleet has synchronised with a freshly loaded BlueZ: wake `waitUntilLoaded`.
    private func noteSynchronised(_ value: Bool) {
        synchronised = value
        guard value else { return }
        let waiters = loadWaiters
        loadWaiters = [:]
        for waiter in waiters.values { waiter.resume(returning: true) }
    }

    /// One change from the BlueZ mirror, in BlueZ's order.
    private func handle(_ event: BlueZMirrorEvent) async {
        switch event {
        case .serviceLoaded:
            bluezAvailable = true
            logger.info("BlueZ is available; synchronising the fleet")
            await synchronise()
            noteSynchronised(true)
        case .serviceLost:
            logger.warning("BlueZ left the bus; boards wait for it to return")
            bluezAvailable = false
            noteSynchronised(false)
            await refreshAdapters()
            for board in boards.values { await board.allDevicesRemoved() }
            devicePaths = [:]
        case .interfacesAdded(let path, let interfaces):
            if interfaces[BlueZInterfaces.adapter] != nil { await refreshAdapters() }
            if interfaces[BlueZInterfaces.device] != nil { await deviceChanged(at: DevicePath(path), changed: nil) }
        case .interfacesRemoved(let path, let interfaces):
            if interfaces.contains(BlueZInterfaces.adapter) { await refreshAdapters() }
            if interfaces.contains(BlueZInterfaces.device) { await deviceRemoved(at: DevicePath(path)) }
        case .propertiesChanged(let path, let interface, let changed, _):
            if interface == BlueZInterfaces.adapter {
                await refreshAdapters()
                // Powered off and on again, both told before this signal is handled: the
                // adapter looks powered throughout, but BlueZ ended every discovery session
                // as it powered off, ours included.
                if changed["Powered"]?.bool == false, let adapter = adapters[AdapterPath(path)], adapter.adapter.powered {
                    await adapter.discovery.sessionEnded()
                }
                if changed["Discovering"]?.bool == false, let adapter = adapters[AdapterPath(path)] {
                    await adapter.discovery.discoveringStopped()
                }
            } else if interface == BlueZInterfaces.device {
                // Advertisements of boards that do not wait for one never get here: they are
                // recorded on the mirror (see `run()`).
                await deviceChanged(at: DevicePath(path), changed: Set(named: changed.keys))
            }
        }
    }

    /// Brings every board in line with a freshly loaded mirror.
    private func synchronise() async {
        await refreshAdapters()
        let tree = await client.mirror.tree
        var present: [BoardAddress: Set<AdapterPath>] = [:]
        for adapter in adapters.values {
            for device in tree.devices(onAdapter: adapter.path) {
                await deviceChanged(at: device.path, changed: nil)
                if let address = BoardAddress(device.address) { present[address, default: []].insert(adapter.path) }
            }
        }
        for (address, board) in boards {
            await board.keepDevices(onAdapters: present[address] ?? [])
        }
    }

    /// Takes the adapters BlueZ shows now that the selection names: new ones are used (their
    /// discovery starts), gone or powered-off ones hand their boards to the others (those
    /// boards lose their link and reconnect where they are heard).
    private func refreshAdapters() async {
        let shown = bluezAvailable ? await client.mirror.tree.adapters.filter(context.adapterSelection.matches) : []
        let wasPowered = anyAdapterPowered
        var roomAppeared = false
        var lost: [AdapterPath] = []
        for (path, adapter) in adapters where !shown.contains(where: { $0.path == path }) {
            adapters[path] = nil
            adapter.retire()
            lost.append(path)
            await adapter.discovery.setAdapter(nil)
            logger.info("adapter gone", metadata: ["ble.adapter": "\(adapter.name)"])
        }
        for current in shown {
            if let adapter = adapters[current.path] {
                let before = adapter.adapter
                adapter.update(current)
                if before.powered != current.powered {
                    logger.info(
                        "adapter \(current.powered ? "powered on" : "powered off")", metadata: ["ble.adapter": "\(current.name)"])
                    if current.powered {
                        adapter.poweredOn()
                        roomAppeared = true
                    } else {
                        lost.append(current.path)
                    }
                    await adapter.discovery.setAdapter(current.powered ? current : nil)
                }
            } else {
                let reports = context.healthReports.continuation
                let adapter = FleetAdapter(
                    adapter: current, limit: context.configuration.limit(for: current),
                    reserve: context.configuration.reservedFleetSlots, client: client,
                    filter: context.discoveryFilter, logger: logger,
                    report: { reports.yield(($0, $1)) })
                adapters[current.path] = adapter
                adapter.linksShown(in: await client.mirror.tree)
                logger.info(
                    "adapter present",
                    metadata: ["ble.adapter": "\(current.name)", "adapter.address": "\(current.address)",
                               "adapter.powered": "\(current.powered)", "adapter.limit": "\(adapter.limit)"])
                if current.powered {
                    await adapter.discovery.setAdapter(current)
                    roomAppeared = true
                }
            }
        }
        // Connects waiting for a slot on an adapter that went end now.
        if !lost.isEmpty { context.slotsChanged.notify() }
        for path in lost {
            for board in boards.values { await board.update { $0.adapterLost(path, now: $1) } }
        }
        let isPowered = anyAdapterPowered
        guard wasPowered != isPowered else {
            if roomAppeared {
                for board in boards.values { await board.update { $0.connectionRoomAppeared(now: $1) } }
            }
            return
        }
        context.events.publish(.adapterPowered(isPowered))
        for board in boards.values { await board.update { $0.adapterPowered(isPowered, now: $1) } }
    }

    /// What a device told anew (appeared, or read again) says: every property the fleet reads of it.
    static let anew: Set<BlueZDevice.Property> = BlueZDevice.Property.link.union([.rssi, .name])

    /// A device appeared (`changed == nil`) or some of its properties changed.
    private func deviceChanged(at path: DevicePath, changed: Set<BlueZDevice.Property>?) async {
        guard let device = await client.mirror.tree.device(at: path), adapters[device.adapterPath] != nil,
            let address = BoardAddress(device.address)
        else { return }
        // Set only when new: every set rebuilds the advertisements' path index.
        if devicePaths[path] != address { devicePaths[path] = address }
        // The adapter's ledger learns of a link up or down before anyone asks it of the board.
        if changed?.sayLink ?? true {
            adapters[device.adapterPath]?.linksShown(in: await client.mirror.tree)
        }
        if let board = boards[address] {
            await board.deviceUpdated(device, changed: changed ?? Self.anew)
            // Seen, or renamed: the registry keeps its name (the one record of it).
            if changed.map({ $0.contains(.rssi) || $0.contains(.name) }) ?? true { await sightings.note(address, name: device.name) }
            // A known board (re)appearing, e.g. after a BlueZ restart: connect it again.
            if changed == nil { await board.requestAutoConnect() }
            return
        }
        if adopting[address] != nil {
            adopting[address] = true
            return
        }
        let identity = BoardIdentity(address: address, name: device.name, alias: nil)
        guard context.tunables.adoption.shouldAdopt(identity, ofKnownKind: context.profiles.recognises(device.uuids))
        else { return }
        await adopt(device, at: path, address: address)
    }

    /// Makes `device` a board of the fleet. The registry is asked first (it saves to disk,
    /// on a queue of its own): what BlueZ says of the device meanwhile (its link may come up
    /// or fall) is read again after, never given to the board in the wrong order.
    private func adopt(_ seen: BlueZDevice, at path: DevicePath, address: BoardAddress) async {
        adopting[address] = false
        do {
            try await registry.noteSeen(address, name: seen.name)
        } catch {
            logger.error("could not save the board registry: \(error)", metadata: ["ble.address": "\(address)"])
        }
        let record = await registry.record(for: address)
            ?? BoardRecord(address: address, name: seen.name, firstSeen: .now, lastSeen: .now)
        guard let device = await client.mirror.tree.device(at: path) else {
            adopting[address] = nil
            return
        }
        let board = Board(record: record, devices: [device], adapterPowered: anyAdapterPowered, context: context, registry: registry)
        boards[address] = board
        let changedMeanwhile = adopting.removeValue(forKey: address) == true
        logger.info("board adopted", metadata: ["ble.address": "\(address)", "ble.name": "\(device.name ?? "")"])
        context.events.publish(.boardAdded(address, name: device.name))
        await board.deviceUpdated(device, changed: Self.anew)
        if changedMeanwhile, let current = await client.mirror.tree.device(at: path) {
            await board.deviceUpdated(current, changed: Self.anew)
        }
        await board.requestAutoConnect()
    }

    private func deviceRemoved(at path: DevicePath) async {
        guard let address = devicePaths.removeValue(forKey: path) else { return }
        let adapter = path.adapter
        adapters[adapter]?.linksShown(in: await client.mirror.tree)
        await boards[address]?.deviceRemoved(adapter: adapter)
    }

    /// Takes `address` out of the fleet (``Fleet/forget(_:)``): its board, and the index of
    /// its devices' advertisements. A device of it BlueZ shows after is adopted afresh.
    func removeBoard(_ address: BoardAddress) -> Board? {
        boards.removeValue(forKey: address)
    }

    private func refreshPathIndex() {
        pathIndex.replace(with: devicePaths.compactMapValues { boards[$0] })
    }
}
