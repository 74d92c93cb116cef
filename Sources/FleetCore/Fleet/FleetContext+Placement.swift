import BlueZ

/// Where a board connects (``Placement``): the adapter that hears it best and has room.
extension FleetContext {
    /// Restarts discovery on these adapters, so they report the boards in range at once.
    private func kickDiscovery(on paths: [AdapterPath]) async {
        for path in paths {
            await adapter(path)?.discovery.kick()
        }
    }

    /// Returns once BlueZ shows `board` on one (`all`: every one) of `adapters` (paths), or
    /// after `limit`.
    private func waitUntilHeard(_ board: BoardAddress, on adapters: [AdapterPath], all: Bool, within limit: Duration) async {
        let paths = adapters.map { DevicePath(adapter: $0, address: board.rawValue) }
        _ = try? await client.mirror.wait(timeout: limit, description: "\(board) heard by other adapters") { snapshot in
            let heard = paths.filter { snapshot.tree.device(at: $0) != nil }.count
            return (all ? heard == paths.count : heard > 0) ? .done(()) : .pending
        }
    }

    /// How long a connect waits for an adapter with room to hear the board when the ones
    /// that heard it are full.
    static let placementWait: Duration = .seconds(2)

    /// Where `board` connects now (``placement(for:rssi:)``), the adapters that may
    /// not have heard it yet given a moment first. Adapters report a board one after another
    /// (and not while they connect): one with room may not have heard it yet. Rather than
    /// free a slot on a full adapter (a disconnect and a connect), this waits briefly for one
    /// of them to hear it; for a connect nobody waits for (not `command`), for the adapters
    /// lately started, to settle where it is heard best. Nil when no adapter hears it, or
    /// when cancelled meanwhile.
    nonisolated(nonsending) func placement(for board: BoardAddress, live: BoardLive, command: Bool) async -> PlacementChoice? {
        guard let choice = await placement(for: board, rssi: live.devices.rssi) else { return nil }
        let waitOn = choice.full ? choice.roomWhereUnheard : (command ? [] : choice.freshRoomWhereUnheard)
        guard !waitOn.isEmpty else { return choice }
        choice.adapter.unclaim(board)
        if choice.full { await kickDiscovery(on: waitOn) }
        await waitUntilHeard(board, on: waitOn, all: !choice.full, within: Self.placementWait)
        guard !Task.isCancelled else { return nil }
        return await placement(for: board, rssi: live.devices.rssi)
    }

    /// The adapter `board` (a board or device with no link: a linked one is not placed)
    /// should connect through now: one that hears it (BlueZ has its device there), is powered
    /// and in use, scored by ``Placement``; nil when none does.
    /// The adapter chosen is claimed (``FleetAdapter/claim(_:)``): the caller unclaims it
    /// when its connect is done.
    func placement(for board: BoardAddress, rssi: [AdapterPath: Int]) async -> PlacementChoice? {
        let tree = await client.mirror.tree
        // No other placement from reading the claims to taking one: placements that run at
        // the same moment see each other's.
        let choice = placementLock.withLock { _ in place(board, rssi: rssi, tree: tree) }
        if choice != nil { slotsChanged.notify() }
        return choice
    }

    private func place(_ board: BoardAddress, rssi: [AdapterPath: Int], tree: BlueZObjectTree) -> PlacementChoice? {
        var candidates: [Placement.Candidate] = []
        var devices: [AdapterPath: BlueZDevice] = [:]
        var roomWhereUnheard: [AdapterPath] = []
        var freshRoomWhereUnheard: [AdapterPath] = []
        let adapters = self.adapters
        // An adapter powered off, or whose controller is being recovered, takes nobody (and
        // wakes no board in standby: ``hasRoom(onAdapter:for:)``); its recovery or power-on
        // wakes every board.
        for (path, adapter) in adapters where adapter.adapter.powered && adapter.health.isUsable {
            // The links as BlueZ shows them now, then the ledger's count of the slots left.
            adapter.linksShown(in: tree)
            let ledger = adapter.ledger
            guard let device = tree.device(onAdapter: path, address: board.rawValue) else {
                if ledger.free(for: board) > 0 {
                    roomWhereUnheard.append(path)
                    if adapter.isFresh { freshRoomWhereUnheard.append(path) }
                }
                continue
            }
            devices[path] = device
            candidates.append(ledger.candidate(
                path: path, for: board, rssi: rssi[path] ?? device.rssi.map(Int.init),
                recentFailures: adapter.recentFailures(of: board), bonded: device.bonded))
        }
        let chosen: (path: AdapterPath, full: Bool)? =
            switch Placement.choose(candidates) {
            case .connect(let path): (path, false)
            case .full(let path): (path, true)
            case .none: nil
            }
        guard let chosen, let adapter = adapters[chosen.path], let device = devices[chosen.path] else { return nil }
        adapter.claim(board)
        return PlacementChoice(
            adapter: adapter, device: device, full: chosen.full, roomWhereUnheard: roomWhereUnheard,
            freshRoomWhereUnheard: freshRoomWhereUnheard)
    }

    /// Whether `board` could be given a slot on the adapter at `path` now: in use, powered,
    /// its controller usable, and its ledger with a slot not promised to another. What a
    /// board in standby asks when an adapter hears it: placement counts the same way, so a
    /// board woken by room is placed there.
    func hasRoom(onAdapter path: AdapterPath, for board: BoardAddress) -> Bool {
        guard let adapter = adapter(path), adapter.adapter.powered, adapter.health.isUsable else { return false }
        return adapter.ledger.free(for: board) > 0
    }
}
