import BlueZ
import Logging
import Synchronization

/// Any device, not only the fleet's boards: the daemon as a Bluetooth proxy for its clients
/// (a bleak script through `blefleet.bleak`). A client's connect is a lease on a link
/// through the same adapters, placement and slots as the boards: a leased link is never
/// given away to rotate, idle board links give way to it (least recently used first), and
/// it ends when the client disconnects or its connection closes.
///
/// ``Fleet/devices`` is the fleet's one proxy; it keeps no state of its own: the leases, the
/// adapters, their slots and the boards are the fleet's (``FleetContext``).
public final class DeviceProxy: Sendable {
    let context: FleetContext
    var client: BlueZClient { context.client }
    var leases: DeviceLeases { context.leases }
    var logger: Logger { context.logger }

    init(context: FleetContext) {
        self.context = context
    }

    /// One more (`+1`) or one fewer (`-1`) client wants every device reported.
    func widenDiscovery(_ delta: Int) async {
        guard let wide = context.widenDiscovery(delta) else { return }
        logger.debug(wide ? "discovery reports every device for clients" : "discovery back to the profiles' services")
        // Each adapter takes the filter as it is when its turn comes: a widening and its end
        // that overlap leave every adapter with the last.
        for adapter in context.adapters.values { await adapter.discovery.setFilter(context.discoveryFilter) }
    }

    /// The device object of `address` whose link is up, on any adapter.
    static func linkedDevice(_ address: BoardAddress, in tree: BlueZObjectTree) -> BlueZDevice? {
        tree.objects(implementing: BlueZInterfaces.device).lazy
            .map { BlueZDevice(path: $0.path, properties: $0.properties) }
            .first { BoardAddress($0.address) == address && $0.hasLink }
    }

    // MARK: Leases

    /// Connects to `address` for `holder` (or joins the link that is up) and leases it: the
    /// fleet never gives the link away while leased. Waits for a connection slot (idle board
    /// links are released for it, least recently used first) until `timeout`, without
    /// holding its adapter's connect permit meanwhile. `onLost` is called once, with a
    /// reason, when the link goes down while leased.
    ///
    /// What clients take is bounded: a user holds at most ``FleetConfiguration/leasesPerUser``
    /// devices (`limitReached` beyond), and clients' links never take an adapter's reserve
    /// (``FleetConfiguration/reservedFleetSlots``): the fleet's boards always have those to
    /// rotate through. Cancelled (its client gone), the connect stops at once and says so.
    public func leaseDevice(
        _ address: BoardAddress, holder: LeaseHolder, timeout: Duration, onLost: @escaping @Sendable (String) -> Void
    ) async throws(DeviceError) -> DeviceLink {
        let bound = context.configuration.leasesPerUser
        if case .userBound(let held) = leases.begin(holder, for: address, bound: bound) {
            throw DeviceError(
                .limitReached,
                "uid \(holder.uid) already holds \(held) device\(held == 1 ? "" : "s") (leased or connecting), the most one user may"
                    + " (leases-per-user: \(bound)): disconnect one first.")
        }
        defer {
            leases.end(holder, for: address)
            // A slot lent to its connect goes back, unless its link is leased now.
            for adapter in context.adapters.values { adapter.withLedger { $0.connectEnded(address) } }
        }
        let deadline = client.clock.now + timeout
        var connectedHere = false
        // A link resolved before this call has long had its objects announced.
        let resolvedBefore = Self.linkedDevice(address, in: await client.mirror.tree)?.servicesResolved == true
        if let board = context.board(address) {
            let outcome = await Self.race(deadline, clock: client.clock) { () async -> DeviceError? in
                do {
                    try await board.commands.connect()
                    return nil
                } catch let error as FleetError {
                    return DeviceError(error)
                } catch {
                    return DeviceError(.failed, "\(error)")
                }
            }
            if Task.isCancelled { throw Self.cancelled(address) }
            if outcome.timedOut, outcome.value != nil {
                throw DeviceError(.timeout, "\(address) was not connected within \(timeout) (a fleet board: `blectl boards` says why).")
            }
            if let error = outcome.value { throw error }
        } else if Self.linkedDevice(address, in: await client.mirror.tree)?.servicesResolved != true {
            // Cancelled at the deadline, the connect says where it stood.
            let outcome = await Self.race(deadline, clock: client.clock) { () async -> DeviceError? in
                await self.connectDevice(address, deadline: deadline)
            }
            if Task.isCancelled { throw Self.cancelled(address) }
            if let error = outcome.value { throw error }
            connectedHere = true
        }
        // What bluetoothd announces right after ServicesResolved (the device's services and
        // characteristics can come after it, in the same burst) is in the tree handed over.
        if !resolvedBefore, let linked = Self.linkedDevice(address, in: await client.mirror.tree) {
            do {
                try await client.gattObjectsSettled(under: linked.path)
            } catch {
                // Its client went meanwhile: a link this call made is not left to nobody.
                if connectedHere { await Task { [client] in try? await client.disconnect(linked, timeout: .seconds(5)) }.value }
                throw Self.cancelled(address)
            }
        }
        let tree = await client.mirror.tree
        guard let device = Self.linkedDevice(address, in: tree) else {
            throw DeviceError(.notConnected, "\(address) disconnected as soon as it was connected.")
        }
        let path = device.path
        let adapterName = device.adapterPath.name
        // The slot is the adapter's to lend (the one its connect was lent, or one now).
        if let adapter = context.adapter(device.adapterPath),
            let refusal = adapter.withLedger({ $0.lease(address) })
        {
            // A board stays the fleet's; a link that is not ours (another program's) stays as it is.
            throw Self.reserveRefusal(address, adapter: adapterName, limit: adapter.limit, refusal)
        }
        // A lease through another adapter before (its link moved) gives that slot back.
        if let old = leases.adapterPath(of: address), old != device.adapterPath {
            context.adapter(old)?.withLedger { $0.leaseEnded(address) }
        }
        let added = leases.add(
            holder, to: address, devicePath: path, adapterPath: device.adapterPath, isBoard: context.board(address) != nil,
            onLost: onLost)
        if added == .first {
            let leases = self.leases
            let context = self.context
            let lostLink = Mutex(false)
            let observation = await client.mirror.observe(path: path.rawValue, interfaces: [BlueZInterfaces.device]) { event in
                let reason: String? =
                    switch event {
                    case .propertiesChanged(_, _, let changed, _) where changed["Connected"]?.bool == false:
                        "the link went down"
                    case .interfacesRemoved: "BlueZ removed the device"
                    case .serviceLost: "bluetoothd stopped"
                    default: nil
                    }
                guard let reason, lostLink.withLock({ lost in defer { lost = true }; return !lost }) else { return }
                guard let lease = leases.lost(address, devicePath: path) else { return }
                Self.leaseEnded(lease, of: address, in: context)
                for onLost in lease.holders.values { onLost(reason) }
            }
            leases.watch(address, with: observation)
            // Down meanwhile (between the look above and the observation): over at once.
            if await client.mirror.tree.hasLink(at: path) != true, let lease = leases.lost(address, devicePath: path) {
                Self.leaseEnded(lease, of: address, in: context)
                for onLost in lease.holders.values { onLost("the link went down") }
            }
            logger.info(
                "device leased to a client",
                metadata: ["ble.address": "\(address)", "ble.adapter": "\(adapterName)", "client": "\(holder.id)",
                           "rpc.client.uid": "\(holder.uid)"])
        }
        let services = tree.gattServices(device: path)
        return DeviceLink(
            address: address, name: device.alias ?? device.name, adapter: adapterName,
            mtu: Self.mtu(of: services), services: services.map(DeviceGATTService.init))
    }

    /// A client's lease on `address` ended (its last holder gone, or its link): the slot its
    /// adapter lent for it goes back.
    static func leaseEnded(_ lease: DeviceLeases.Lease, of address: BoardAddress, in context: FleetContext) {
        context.adapter(lease.adapterPath)?.withLedger { $0.leaseEnded(address) }
        context.slotsChanged.notify()
    }

    /// A lease asked for by a client that went away meanwhile.
    static func cancelled(_ address: BoardAddress) -> DeviceError {
        DeviceError(.cancelled, "The connect of \(address) was cancelled: its client's connection ended.")
    }

    /// The adapter lends clients no more slots: the phrase "connection slot" is what
    /// bleak-retry-connector classifies as out of slots (it backs off and tries again).
    static func reserveRefusal(_ address: BoardAddress, adapter: String, limit: Int, _ refusal: AdapterLedger.Refusal) -> DeviceError {
        let (lent, lendable) = (refusal.lent, refusal.lendable)
        let kept = limit - lendable
        let reserve = "\(kept) of its \(limit) connection slot\(limit == 1 ? " is" : "s are") kept for the fleet's boards (reserved-fleet-slots)"
        guard lendable > 0 else {
            return DeviceError(.busy, "\(adapter) lends clients no connection slot for \(address): \(reserve).")
        }
        return DeviceError(
            .busy,
            "No connection slot of \(adapter) may be leased for \(address): \(reserve), and clients hold the other"
                + " \(lent == 1 ? "one" : "\(lent)").")
    }

    /// Ends `holder`'s lease on `address`; the link of a device no one holds any more that is
    /// not a board is released at once.
    public func endLease(_ address: BoardAddress, holder: LeaseHolder) async {
        guard let lease = leases.remove(holder, from: address) else { return }
        Self.leaseEnded(lease, of: address, in: context)
        logger.info(
            "device lease ended",
            metadata: ["ble.address": "\(address)", "client": "\(holder.id)", "rpc.client.uid": "\(holder.uid)"])
        guard !lease.isBoard, context.board(address) == nil,
            let device = await client.mirror.tree.device(at: lease.devicePath), device.hasLink
        else {
            context.slotsChanged.notify()
            return
        }
        do {
            try await client.disconnect(device)
        } catch {
            logger.warning("could not release a device's link", metadata: ["ble.address": "\(address)", "error": "\(error)"])
        }
        context.slotsChanged.notify()
    }

    /// Ends every lease of `holder` (its connection closed).
    public func endLeases(of holder: LeaseHolder) async {
        for address in leases.held(by: holder) { await endLease(address, holder: holder) }
    }

    /// Connects a device that is not a board, as a board connects: through the adapter that
    /// hears it best with room (``Placement``), one connect at a time per adapter, discovery
    /// paused meanwhile, a slot reserved (idle board links released for it) out of those the
    /// adapter lends clients. The adapter's connect permit is held for one look at the slots
    /// and for the connect, never while waiting for a slot: the fleet's own connects go on
    /// meanwhile. Returns nil when linked (the slot lent, ``DeviceLeases/lend(_:on:lendable:)``),
    /// else why not; when cancelled (its deadline), a timeout saying where it stood.
    private func connectDevice(_ address: BoardAddress, deadline: ContinuousClock.Instant) async -> DeviceError? {
        var choice = await context.placement(for: address, rssi: [:])
        if choice == nil {
            // Not heard (yet): every device reported for a moment, until it is.
            await widenDiscovery(+1)
            let usable = Set(context.adapters.values.filter { $0.adapter.powered && $0.health.isUsable }.map(\.path))
            _ = try? await client.mirror.wait(
                timeout: max(.milliseconds(1), client.clock.now.duration(to: deadline)), description: "\(address) heard"
            ) { snapshot in
                snapshot.tree.objects(implementing: BlueZInterfaces.device).contains {
                    BoardAddress($0.properties["Address"]?.string ?? "") == address
                        && usable.contains(AdapterPath($0.properties["Adapter"]?.string ?? ""))
                } ? .done(()) : .pending
            }
            await widenDiscovery(-1)
            if Task.isCancelled {
                return DeviceError(.notFound, "No adapter of the fleet heard \(address) within the time given (is it on and advertising?).")
            }
            choice = await context.placement(for: address, rssi: [:])
        }
        guard let choice else {
            return DeviceError(.notFound, "No adapter of the fleet hears \(address) (is it on and advertising?).")
        }
        let adapter = choice.adapter
        guard adapter.ledger.lendable > 0 else {
            adapter.unclaim(address)
            context.slotsChanged.notify()
            return Self.reserveRefusal(address, adapter: adapter.name, limit: adapter.limit, .init(lent: 0, lendable: 0))
        }
        await adapter.discovery.hold()
        defer {
            adapter.unclaim(address)
            context.slotsChanged.notify()
            Task { await adapter.discovery.release() }
        }
        while !Task.isCancelled, !adapter.isRetired {
            let seen = context.slotsChanged.generation
            do {
                try await adapter.scheduler.acquire()
            } catch {
                break
            }
            let permit = ConnectPermit(adapter: adapter, rotation: choice.full)
            defer { permit.release() }
            if adapter.withLedger({ $0.lend(address) }) == nil {
                if await adapter.trySlot(for: address, command: true, in: context) == true {
                    adapter.linking(address)
                    do {
                        try await client.connect(
                            choice.device, timeout: max(.milliseconds(1), client.clock.now.duration(to: deadline)),
                            linkUp: { permit.release(linked: true) })
                        return nil
                    } catch {
                        adapter.withLedger { $0.connectEnded(address) }
                        adapter.noteFailure(of: address)
                        let bluez = BlueZError(error)
                        if case .timeout = bluez {
                            return DeviceError(.timeout, "\(address) did not connect through \(adapter.name) in time (\(bluez.message)).")
                        }
                        return DeviceError(.connectFailed, "\(address) could not be connected through \(adapter.name): \(bluez.message).")
                    }
                }
                adapter.withLedger { $0.connectEnded(address) }
            }
            // No slot now: the permit goes back, and the fleet's connects go on until one frees.
            permit.release()
            await context.slotsChanged.wait(after: seen)
        }
        return noSlot(for: address, on: adapter)
    }

    /// Why a connect still waiting at its deadline did not happen: every connection slot of
    /// its adapter that clients may take in use (the phrase "connection slot" is what
    /// bleak-retry-connector classifies as out of slots), or its turn in the adapter's queue
    /// of connects not come.
    private func noSlot(for address: BoardAddress, on adapter: FleetAdapter) -> DeviceError {
        let ledger = adapter.ledger
        if ledger.lent.count >= ledger.lendable {
            return DeviceError(
                .timeout,
                "No connection slot of \(adapter.name) became free for \(address) in time: clients hold all \(ledger.lendable) it lends"
                    + " (\(ledger.reserve) of its \(ledger.limit) kept for the fleet's boards: reserved-fleet-slots).")
        }
        let leased = leases.count
        let held = leased > 0 ? " (\(leased) device link\(leased == 1 ? "" : "s") leased by clients)" : ""
        guard ledger.held(except: address).count >= ledger.limit else {
            return DeviceError(
                .timeout, "\(address) was still waiting for its turn to connect through \(adapter.name) at its deadline"
                    + " (\(ledger.queued.count) connects queued there).")
        }
        return DeviceError(
            .timeout,
            "No connection slot of \(adapter.name) became free for \(address) in time: all \(ledger.limit) are in use\(held).")
    }

    /// Runs `body` until `deadline`; past it, cancels it and waits for it to end (it cleans
    /// up after itself and says where it stood). Its value, and whether the deadline passed.
    static func race<Value: Sendable>(
        _ deadline: ContinuousClock.Instant, clock: any RadioClock, _ body: @escaping @Sendable () async -> Value
    ) async -> (value: Value, timedOut: Bool) {
        await withTaskGroup(of: Value?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try? await clock.sleep(until: deadline)
                return nil
            }
            var timedOut = false
            while let next = await group.next() {
                if let value = next {
                    group.cancelAll()
                    return (value, timedOut)
                }
                if !timedOut, clock.now >= deadline {
                    timedOut = true
                    group.cancelAll()
                }
            }
            preconditionFailure("the body of a race always ends with a value")
        }
    }

    // MARK: GATT by handle

    /// The linked device of `address`, or `notConnected`.
    private func linked(_ address: BoardAddress) async throws(DeviceError) -> (BlueZDevice, BlueZObjectTree) {
        let tree = await client.mirror.tree
        guard let device = Self.linkedDevice(address, in: tree) else {
            throw DeviceError(.notConnected, "\(address) is not connected (device.connect connects it).")
        }
        return (device, tree)
    }

    /// The services of the linked device `address` (handles, properties, descriptors), and its MTU.
    public func deviceServices(_ address: BoardAddress) async throws(DeviceError) -> (mtu: Int, services: [DeviceGATTService]) {
        let (device, tree) = try await linked(address)
        guard device.servicesResolved else {
            throw DeviceError(.notConnected, "\(address) is connected but its services are not resolved yet.")
        }
        let services = tree.gattServices(device: device.path)
        return (Self.mtu(of: services), services.map(DeviceGATTService.init))
    }

    /// The ATT MTU BlueZ shows on the device's characteristics (5.62 and later), else ATT's default.
    static func mtu(of services: [BlueZGATTService]) -> Int {
        services.lazy.flatMap(\.characteristics).compactMap(\.mtu).first.map(Int.init) ?? 23
    }

    private func attribute(_ address: BoardAddress, handle: UInt16, descriptor: Bool) async throws(DeviceError)
        -> BlueZGATTAttribute
    {
        let (device, tree) = try await linked(address)
        guard let found = tree.gattAttribute(device: device.path, handle: handle, descriptor: descriptor) else {
            let hex = "0x" + String(handle, radix: 16)
            throw DeviceError(
                .notSupported, "\(address) has no \(descriptor ? "descriptor" : "characteristic or descriptor") with handle \(handle) (\(hex)).")
        }
        return found
    }

    /// Reads the characteristic (or, with `descriptor`, the descriptor) with `handle`.
    public func readAttribute(_ address: BoardAddress, handle: UInt16, descriptor: Bool, timeout: Duration) async throws(DeviceError)
        -> [UInt8]
    {
        let found = try await attribute(address, handle: handle, descriptor: descriptor)
        let client = self.client
        return try await oneAtATime(address, timeout: timeout) { remaining in
            try await client.readValue(found, timeout: remaining)
        }
    }

    /// The value BlueZ holds of the characteristic (or descriptor) with `handle`, the last one
    /// read or notified, without asking the device (empty when it holds none), as bleak's
    /// BlueZ backend answers `use_cached=True`.
    public func cachedAttribute(_ address: BoardAddress, handle: UInt16, descriptor: Bool) async throws(DeviceError) -> [UInt8] {
        let found = try await attribute(address, handle: handle, descriptor: descriptor)
        let properties = await client.mirror.tree.properties(found.path, found.interface)
        return properties?["Value"]?.bytes ?? []
    }

    /// Writes the characteristic (or descriptor) with `handle`.
    public func writeAttribute(
        _ address: BoardAddress, handle: UInt16, descriptor: Bool, value: [UInt8], withResponse: Bool, timeout: Duration
    ) async throws(DeviceError) {
        let found = try await attribute(address, handle: handle, descriptor: descriptor)
        let client = self.client
        try await oneAtATime(address, timeout: timeout) { remaining in
            try await client.writeValue(value, to: found, type: withResponse ? .request : .command, timeout: remaining)
        }
    }

    /// Runs one GATT call on `address` at a time: in the board's own queue when it is one of
    /// the fleet's (its LED writes and a client's writes never meet in BlueZ, which refuses a
    /// second write to a characteristic with one under way: InProgress), else in the device's.
    /// The wait for the queue counts against `timeout`.
    private func oneAtATime<T: Sendable>(
        _ address: BoardAddress, timeout: Duration, _ body: @escaping @Sendable (Duration) async throws -> T
    ) async throws(DeviceError) -> T {
        let clock = client.clock
        let deadline = clock.now + timeout
        let queue = context.board(address)?.gatt.queue ?? leases.queue(for: address)
        let outcome = await Self.race(deadline, clock: client.clock) { () async -> Result<T, DeviceError> in
            do {
                try await queue.acquire()
            } catch {
                return .failure(DeviceError(.timeout, "\(address) was still busy with other GATT operations at the deadline."))
            }
            defer { queue.release() }
            do {
                return .success(try await body(max(.milliseconds(1), clock.now.duration(to: deadline))))
            } catch {
                return .failure(DeviceError(gatt: BlueZError(error), address: address))
            }
        }
        return try outcome.value.get()
    }

    /// Follows the notifications (or indications) of the characteristic with `handle`: one
    /// BlueZ subscription however many clients follow it (the BlueZ client counts them).
    public func followAttribute(
        _ address: BoardAddress, handle: UInt16, onValue: @escaping @Sendable ([UInt8]) -> Void,
        onEnd: @escaping @Sendable (String) -> Void
    ) async throws(DeviceError) -> DeviceFollow {
        let found = try await attribute(address, handle: handle, descriptor: false)
        guard let characteristic = await client.mirror.tree.characteristic(at: found.path) else {
            throw DeviceError(.notConnected, "\(address) disconnected.")
        }
        guard characteristic.flags.contains(where: { $0 == "notify" || $0 == "indicate" }) else {
            throw DeviceError(.notSupported, "The characteristic with handle \(handle) of \(address) neither notifies nor indicates.")
        }
        do {
            return DeviceFollow(
                try await client.notifications(characteristic, onValue: onValue) { error in
                    onEnd("\(error)")
                })
        } catch {
            throw DeviceError(gatt: BlueZError(error), address: address)
        }
    }

    // MARK: Connected devices

    /// The devices connected now with their services resolved that offer one of `services`
    /// (any, when empty), on `adapter` (a name like `hci0` or an address; every adapter when
    /// nil; none for an adapter the daemon does not have), as bleak's BlueZ backend lists them
    /// for `BleakAdapter.get_connected_devices`.
    public func connectedDevices(services: [GattUUID], adapter: String?) async -> [ConnectedDevice] {
        let tree = await client.mirror.tree
        // An adapter the daemon does not have has no links (as BlueZ lists none for it).
        let adapterPath = adapter.map { tree.adapter(matching: $0)?.path ?? "" }
        let wanted = Set(services.map(\.bluetooth))
        return tree.objects(implementing: BlueZInterfaces.device)
            .map { BlueZDevice(path: $0.path, properties: $0.properties) }
            .filter { device in
                // A link bluetoothd found up when it learnt of it ("already connected") shows
                // resolved services and never Connected: it is listed all the same.
                device.hasLink && device.servicesResolved && (adapterPath == nil || device.adapterPath == adapterPath)
                    && (wanted.isEmpty || !wanted.isDisjoint(with: device.uuids))
            }
            .compactMap { device in
                BoardAddress(device.address).map { address in
                    ConnectedDevice(
                        address: address, addressType: device.addressType, name: device.name,
                        adapter: device.adapterPath.name, serviceUUIDs: device.uuids.map(\.uuidString))
                }
            }
            .sorted { ($0.adapter, $0.address.rawValue) < ($1.adapter, $1.address.rawValue) }
    }

    // MARK: Advertisements

    /// How recently a device must have been heard for a new watch to report it at once: a
    /// scan session reports what it hears, not every device BlueZ remembers (bonded devices
    /// that are off, links that no longer advertise).
    public static let recentlyHeard: Duration = .seconds(10)

    /// What a device says in its advertisements, as BlueZ shows it (the rest of Device1 is
    /// BlueZ's own: its link, pairing, the services it resolved).
    static let advertised: Set<BlueZDevice.Property> = BlueZDevice.Property.advertisement.union([.uuids, .name, .appearance])

    /// Reports each device the adapters hear, from the fleet's one discovery session: first
    /// every device heard in the last ``recentlyHeard`` and every fleet board the fleet holds
    /// linked (``isFleetLink(_:)``), then each change of a device BlueZ
    /// reports (RSSI, name, data, link), as BlueZ's PropertiesChanged would tell a scanner;
    /// with `services`, only devices that advertise one of them. `removed` is told when BlueZ
    /// drops a device this watch reported (its address and adapter), as bleak's BlueZ
    /// scanner forgets it then. Discovery reports every device while a watch runs.
    /// ``AdvertisementWatch/cancel()`` ends it.
    public func watchAdvertisements(
        services: [GattUUID], deliver: @escaping @Sendable (DeviceAdvertisement) -> Void,
        removed: @escaping @Sendable (BoardAddress, _ adapter: String) -> Void = { _, _ in }
    ) async -> AdvertisementWatch {
        let services = Set(services.map(\.bluetooth))
        await widenDiscovery(+1)
        struct Seen {
            var properties: [String: BlueZObjectTree.Properties] = [:]
            var reported: Set<String> = []
        }
        let seen = Mutex(Seen())
        let deviceInterface = BlueZInterfaces.device
        @Sendable func report(_ path: String, _ properties: BlueZObjectTree.Properties) {
            let advertisement = BlueZAdvertisement(path: path, properties: properties)
            if !services.isEmpty {
                let offered = Set(advertisement.device.uuids)
                    .union(advertisement.serviceData.keys.compactMap(BluetoothUUID.init))
                guard !offered.isDisjoint(with: services) else { return }
            }
            guard let advertisement = DeviceAdvertisement(advertisement) else { return }
            seen.withLock { _ = $0.reported.insert(path) }
            deliver(advertisement)
        }
        let observation = await client.mirror.observe(interfaces: [deviceInterface]) { event in
            switch event {
            case .interfacesAdded(let path, let interfaces):
                guard let properties = interfaces[deviceInterface] else { return }
                seen.withLock { $0.properties[path] = properties }
                report(path, properties)
            case .propertiesChanged(let path, _, let changed, let invalidated):
                let merged = seen.withLock { seen -> BlueZObjectTree.Properties? in
                    guard var properties = seen.properties[path] else { return nil }
                    properties.merge(changed) { _, new in new }
                    for name in invalidated { properties[name] = nil }
                    seen.properties[path] = properties
                    return properties
                }
                if let merged { report(path, merged) }
            case .interfacesRemoved(let path, let interfaces) where interfaces.contains(deviceInterface):
                let gone = seen.withLock { seen -> BlueZObjectTree.Properties? in
                    let properties = seen.properties.removeValue(forKey: path)
                    return seen.reported.remove(path) != nil ? properties : nil
                }
                if let gone, let address = BoardAddress(gone["Address"]?.string ?? "") {
                    removed(address, DevicePath(path).adapter.name)
                }
            case .serviceLost:
                // bluetoothd left: its devices are gone, as a scanner on BlueZ would be told.
                let gone = seen.withLock { seen -> [(String, BlueZObjectTree.Properties)] in
                    defer { seen = Seen() }
                    return seen.reported.compactMap { path in seen.properties[path].map { (path, $0) } }
                }
                for (path, properties) in gone {
                    if let address = BoardAddress(properties["Address"]?.string ?? "") {
                        removed(address, DevicePath(path).adapter.name)
                    }
                }
            default:
                break
            }
        }
        let (objects, hearings) = await client.mirror.devicesAndHearings()
        let recent = client.clock.now.advanced(by: .zero - Self.recentlyHeard)
        for (path, current) in objects {
            let hearing = hearings[path]
            let properties: BlueZObjectTree.Properties?
            if isFleetLink(BlueZDevice(path: path, properties: current)) {
                // What it said when last heard (its RSSI, advertised services and data), as
                // a scanner would hear it were the fleet not holding its link; what BlueZ
                // shows of the link (Connected, the services it resolved) stays. Also when
                // BlueZ changed an advertisement property of the link lately.
                let said = hearing?.advertised.filter { Self.advertised.contains(.init($0.key)) } ?? [:]
                properties = current.merging(said) { _, said in said }
            } else if let at = hearing?.at, at >= recent {
                properties = current
            } else {
                properties = nil  // not reported now; a change BlueZ reports later is
            }
            let fresh = seen.withLock { seen -> Bool in
                guard seen.properties[path] == nil else { return false }
                seen.properties[path] = properties ?? current
                return true
            }
            if fresh, let properties { report(path, properties) }
        }
        return AdvertisementWatch { [weak self] in
            observation.cancel()
            Task { await self?.widenDiscovery(-1) }
        }
    }
}

extension DeviceProxy {
    /// A fleet board whose link the fleet holds: it does not advertise while linked (a Nano
    /// 33 BLE stops, as controllers do on a connection), yet a client may connect to it (its
    /// lease joins the fleet's link), as it would find and connect to it on BlueZ were the fleet
    /// not there and the board advertising. A new watch reports it as heard: the fleet's own
    /// link is not a client's business (bleak's examples find a device before connecting).
    func isFleetLink(_ device: BlueZDevice) -> Bool {
        guard device.hasLink, let address = BoardAddress(device.address) else { return false }
        return context.board(address) != nil
    }
}

/// A running ``DeviceProxy/watchAdvertisements(services:deliver:)``.
public final class AdvertisementWatch: Sendable {
    private let stop: Mutex<(@Sendable () -> Void)?>

    init(stop: @escaping @Sendable () -> Void) {
        self.stop = Mutex(stop)
    }

    /// Ends the watch (idempotent).
    public func cancel() {
        let action = stop.withLock { stop in
            defer { stop = nil }
            return stop
        }
        action?()
    }

    deinit { cancel() }
}
