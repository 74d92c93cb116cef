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
            await refreshAdapters()
            for board in boards.values { await board.allDevicesRemoved() }
            devicePaths = [:]
        case .interfacesAdded(let path, let interfaces):
            if interfaces[BlueZInterfaces.adapter] != nil { await refreshAdapters() }
            if interfaces[BlueZInterfaces.device] != nil { await deviceChanged(at: path, changed: nil) }
        case .interfacesRemoved(let path, let interfaces):
            if interfaces.contains(BlueZInterfaces.adapter) { await refreshAdapters() }
            if interfaces.contains(BlueZInterfaces.device) { await deviceRemoved(at: path) }
        case .propertiesChanged(let path, let interface, let changed, _):
            if interface == BlueZInterfaces.adapter {
                await refreshAdapters()
                // Powered off and on again, both told before this signal is handled: the
                // adapter looks powered throughout, but BlueZ ended every discovery session
                // as it powered off, ours included.
                if changed["Powered"]?.bool == false, let adapter = adapters[path], adapter.adapter.powered {
                    await adapter.discovery.sessionEnded()
                }
                if changed["Discovering"]?.bool == false, let adapter = adapters[path] {
                    await adapter.discovery.discoveringStopped()
                }
            } else if interface == BlueZInterfaces.device {
                // Advertisements of boards that do not wait for one never get here: they are
                // recorded on the mirror (see `run()`).
                await deviceChanged(at: path, changed: Set(changed.keys))
            }
        }
    }

    /// Brings every board in line with a freshly loaded mirror.
    private func synchronise() async {
        await refreshAdapters()
        let tree = await client.mirror.tree
        var present: [BoardAddress: Set<String>] = [:]
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
    func refreshAdapters() async {
        let shown = bluezAvailable ? await client.mirror.tree.adapters.filter(adapterSelection.matches) : []
        let wasPowered = anyAdapterPowered
        var roomAppeared = false
        var lost: [String] = []
        for (path, adapter) in adapters where !shown.contains(where: { $0.path == path }) {
            adapters[path] = nil
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
                    adapter: current, limit: configuration.limit(for: current), client: client,
                    filter: context.discoveryFilter, logger: logger,
                    report: { reports.yield(($0, $1)) })
                adapters[current.path] = adapter
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
        noteAdapterState()
        for path in lost {
            for board in boards.values { await board.adapterLost(path) }
        }
        let isPowered = anyAdapterPowered
        guard wasPowered != isPowered else {
            if roomAppeared {
                for board in boards.values { await board.connectionRoomAppeared() }
            }
            return
        }
        events.publish(.adapterPowered(isPowered))
        for board in boards.values { await board.adapterPowered(isPowered) }
    }

    /// A device appeared (`changed == nil`) or some of its properties changed.
    private func deviceChanged(at path: String, changed: Set<String>?) async {
        guard let device = await client.mirror.tree.device(at: path), adapters[device.adapterPath] != nil,
            let address = BoardAddress(device.address)
        else { return }
        // Set only when new: every set rebuilds the advertisements' path index.
        if devicePaths[path] != address { devicePaths[path] = address }
        let allProperties: Set<String> = ["RSSI", "Connected", "ServicesResolved", "Name"]
        if let board = boards[address] {
            await board.deviceUpdated(device, changed: changed ?? allProperties)
            if changed?.contains("RSSI") ?? true { await sightings.note(address, name: device.name) }
            // A known board (re)appearing, e.g. after a BlueZ restart: connect it again.
            if changed == nil { await board.requestAutoConnect() }
            return
        }
        if adopting[address] != nil {
            adopting[address] = true
            return
        }
        let identity = BoardIdentity(address: address, name: device.name, alias: nil)
        guard tunables.adoption.shouldAdopt(identity, ofKnownKind: context.profiles.recognises(device.uuids))
        else { return }
        await adopt(device, at: path, address: address)
    }

    /// Makes `device` a board of the fleet. The registry is asked first (it saves to disk,
    /// on a queue of its own): what BlueZ says of the device meanwhile (its link may come up
    /// or fall) is read again after, never given to the board in the wrong order.
    private func adopt(_ seen: BlueZDevice, at path: String, address: BoardAddress) async {
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
        let board = Board(record: record, devices: [device], adapterPowered: anyAdapterPowered, context: context)
        boards[address] = board
        let changedMeanwhile = adopting.removeValue(forKey: address) == true
        logger.info("board adopted", metadata: ["ble.address": "\(address)", "ble.name": "\(device.name ?? "")"])
        events.publish(.boardAdded(address, name: device.name))
        await board.deviceUpdated(device, changed: ["RSSI", "Connected", "ServicesResolved"])
        if changedMeanwhile, let current = await client.mirror.tree.device(at: path) {
            await board.deviceUpdated(current, changed: ["RSSI", "Connected", "ServicesResolved", "Name"])
        }
        await board.requestAutoConnect()
    }

    private func deviceRemoved(at path: String) async {
        guard let address = devicePaths.removeValue(forKey: path) else { return }
        await boards[address]?.deviceRemoved(adapter: BlueZObjectTree.parent(of: path))
    }

    /// `/org/bluez/hci0` → `hci0`.
    nonisolated static func adapterName(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }
}
