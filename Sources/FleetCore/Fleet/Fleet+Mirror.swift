import BlueZ

extension Fleet {
    /// One change from the BlueZ mirror, in BlueZ's order.
    func handle(_ event: BlueZMirrorEvent) async {
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
            await adapterChanged(to: nil)
            for board in boards.values { await board.deviceRemoved() }
            devicePaths = [:]
        case .interfacesAdded(let path, let interfaces):
            if interfaces[BlueZInterfaces.adapter] != nil { await adapterChanged(to: await currentAdapter()) }
            if interfaces[BlueZInterfaces.device] != nil { await deviceChanged(at: path, changed: nil) }
        case .interfacesRemoved(let path, let interfaces):
            if interfaces.contains(BlueZInterfaces.adapter) { await adapterChanged(to: await currentAdapter()) }
            if interfaces.contains(BlueZInterfaces.device) { await deviceRemoved(at: path) }
        case .propertiesChanged(let path, let interface, let changed, _):
            if interface == BlueZInterfaces.adapter, path == adapter?.path || adapter == nil {
                await adapterChanged(to: await currentAdapter())
            } else if interface == BlueZInterfaces.device {
                // Advertisements of boards that do not wait for one never get here: they are
                // recorded on the mirror (see `run()`).
                await deviceChanged(at: path, changed: Set(changed.keys))
            }
        }
    }

    /// Notes in the registry the boards whose advertisements were recorded on the mirror.
    func noteSightings() async {
        for (address, board) in boards {
            guard let seen = board.live.current.lastSeen else { continue }
            if let noted = lastNotedSeen[address], noted.at >= seen { continue }
            await noteSeen(address, name: nil)
        }
    }

    /// Records in the registry that the board was seen, at most every few seconds per board
    /// unless its name changed (advertisements arrive about once a second while discovering).
    private func noteSeen(_ address: BoardAddress, name: String?) async {
        let now = ContinuousClock.now
        if let last = lastNotedSeen[address], name == nil || name == last.name, last.at.duration(to: now) < .seconds(5) {
            return
        }
        lastNotedSeen[address] = (now, name ?? lastNotedSeen[address]?.name)
        do {
            _ = try await registry.noteSeen(address, name: name)
        } catch {
            logger.error("could not save the board registry: \(error)", metadata: ["ble.address": "\(address)"])
        }
    }

    private func currentAdapter() async -> BlueZAdapter? {
        await client.mirror.tree.adapter(matching: adapterName)
    }

    /// Brings every board in line with a freshly loaded mirror.
    private func synchronise() async {
        await adapterChanged(to: await currentAdapter())
        let tree = await client.mirror.tree
        guard let adapter else { return }
        let present = tree.devices(onAdapter: adapter.path)
        for device in present { await deviceChanged(at: device.path, changed: nil) }
        let presentAddresses = Set(present.compactMap { BoardAddress($0.address) })
        for (address, board) in boards where !presentAddresses.contains(address) {
            await board.deviceRemoved()
        }
    }

    private func adapterChanged(to new: BlueZAdapter?) async {
        let old = adapter
        adapter = new
        let wasOn = old?.powered ?? false
        let isOn = new?.powered ?? false
        if old?.path != new?.path, old != nil || new != nil {
            logger.info(
                new == nil ? "adapter missing" : "adapter present",
                metadata: ["ble.adapter": "\(adapterName)", "adapter.address": "\(new?.address ?? "-")"])
        }
        discovering = new?.discovering ?? false
        guard wasOn != isOn || old?.path != new?.path else { return }
        await context.discovery.setAdapter(isOn ? new : nil)
        guard wasOn != isOn else { return }
        logger.info("adapter \(isOn ? "powered on" : "powered off or gone")", metadata: ["ble.adapter": "\(adapterName)"])
        events.publish(.adapterPowered(isOn))
        for board in boards.values { await board.adapterPowered(isOn) }
    }

    /// A device appeared (`changed == nil`) or some of its properties changed.
    private func deviceChanged(at path: String, changed: Set<String>?) async {
        guard let adapter, let device = await client.mirror.tree.device(at: path), device.adapterPath == adapter.path,
            let address = BoardAddress(device.address)
        else { return }
        devicePaths[path] = address
        let allProperties: Set<String> = ["RSSI", "Connected", "ServicesResolved", "Name"]
        if let board = boards[address] {
            await board.deviceUpdated(device, changed: changed ?? allProperties)
            if changed?.contains("RSSI") ?? true { await noteSeen(address, name: device.name) }
            // A known board (re)appearing, e.g. after a BlueZ restart: connect it again.
            if changed == nil { await board.requestAutoConnect() }
            return
        }
        let identity = BoardIdentity(address: address, name: device.name, alias: nil)
        guard tunables.adoption.shouldAdopt(identity, advertisesLEDService: device.advertises(NanoProfile.ledService.bluetooth))
        else { return }
        await adopt(device, address: address)
    }

    private func adopt(_ device: BlueZDevice, address: BoardAddress) async {
        do {
            try await registry.noteSeen(address, name: device.name)
        } catch {
            logger.error("could not save the board registry: \(error)", metadata: ["ble.address": "\(address)"])
        }
        let record = await registry.record(for: address)
            ?? BoardRecord(address: address, name: device.name, firstSeen: .now, lastSeen: .now)
        let board = Board(record: record, device: device, adapterPowered: adapter?.powered ?? false, context: context)
        boards[address] = board
        logger.info("board adopted", metadata: ["ble.address": "\(address)", "ble.name": "\(device.name ?? "")"])
        events.publish(.boardAdded(address, name: device.name))
        await board.deviceUpdated(device, changed: ["RSSI", "Connected", "ServicesResolved"])
        await board.requestAutoConnect()
    }

    private func deviceRemoved(at path: String) async {
        guard let address = devicePaths.removeValue(forKey: path) else { return }
        await boards[address]?.deviceRemoved()
    }
}
