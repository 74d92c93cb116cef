import BlueZ

/// Where a board connects (``Placement``) and the connection slots of each adapter: a
/// slot for a board whose turn it is, and idle links released ahead of the connects queued
/// for calls (``ConnectionSlots``).
extension Fleet {
    /// Restarts discovery on these adapters, so they report the boards in range at once.
    func kickDiscovery(on paths: [String]) async {
        for path in paths {
            await adapters[path]?.discovery.kick()
        }
    }

    /// The adapter `board` should connect through now: one that hears it (BlueZ has its
    /// device there), is powered and in use, scored by ``Placement``; nil when none does.
    /// The adapter chosen is claimed (``FleetAdapter/claim(_:)``): the caller unclaims it
    /// when its connect is done.
    func placement(for board: BoardAddress, link: String?, rssi: [String: Int]) async -> PlacementChoice? {
        let tree = await client.mirror.tree
        var candidates: [Placement.Candidate] = []
        var devices: [String: BlueZDevice] = [:]
        var roomWhereUnheard: [String] = []
        var freshRoomWhereUnheard: [String] = []
        // Adapters that heard the board but cannot take it now (powered off, or its controller
        // being recovered): considered too, so a board in standby is not woken by their room
        // (it would be placed elsewhere again, and woken again, without end); their recovery
        // or power-on wakes every board.
        var heardUnusable: Set<String> = []
        for (path, adapter) in adapters {
            guard adapter.adapter.powered && adapter.health.isUsable else {
                if tree.devices(onAdapter: path).contains(where: { BoardAddress($0.address) == board }) {
                    heardUnusable.insert(path)
                }
                continue
            }
            // Slots taken: links up, and connects placed here that will take one.
            let onAdapter = tree.devices(onAdapter: path)
            var taken = Set(onAdapter.filter(\.hasLink).compactMap { BoardAddress($0.address) })
            taken.formUnion(adapter.placedBoards)
            taken.remove(board)
            let freeSlots = max(0, adapter.limit - taken.count)
            guard let device = onAdapter.first(where: { BoardAddress($0.address) == board }) else {
                if freeSlots > 0 {
                    roomWhereUnheard.append(path)
                    if adapter.isFresh { freshRoomWhereUnheard.append(path) }
                }
                continue
            }
            devices[path] = device
            candidates.append(Placement.Candidate(
                path: path, rssi: rssi[path] ?? device.rssi.map(Int.init), freeSlots: freeSlots,
                connectsInProgress: adapter.connectsInProgress, recentFailures: adapter.recentFailures(of: board)))
        }
        // No suspension from reading the claims to taking one: placements that run at the
        // same moment see each other's.
        let decision = Placement.choose(candidates, current: link)
        let chosen: (path: String, full: Bool)? =
            switch decision {
            case .connect(let path): (path, false)
            case .full(let path): (path, true)
            case .none: nil
            }
        guard let chosen, let adapter = adapters[chosen.path], let device = devices[chosen.path] else { return nil }
        adapter.claim(board)
        context.slotsChanged.notify()
        return PlacementChoice(
            adapter: adapter, device: device, full: chosen.full, roomWhereUnheard: roomWhereUnheard,
            freshRoomWhereUnheard: freshRoomWhereUnheard, heard: Set(devices.keys).union(heardUnusable))
    }

    /// Called by a board holding `adapter`'s connect permit: may it take a link there?
    /// Counts the adapter's links (ours and anyone else's); for a command, evicts the least
    /// recently used idle board on that adapter when all its slots are taken.
    func reserveSlot(for address: BoardAddress, on adapter: FleetAdapter, command: Bool) async -> Bool {
        // Every link busy is a moment, not a failure: a command waits until one is free
        // (its board's work done, or a link gone), until its own deadline cancels it.
        while !Task.isCancelled {
            let seen = context.slotsChanged.generation
            guard let granted = await trySlot(for: address, on: adapter, command: command) else {
                guard command else { return false }
                await context.slotsChanged.wait(after: seen)
                continue
            }
            return granted
        }
        return false
    }

    /// One look at `adapter`'s links: true (free, or freed by releasing idle boards), false
    /// (full, and not a command), nil (every link busy, or a release under way: wait).
    private func trySlot(for address: BoardAddress, on adapter: FleetAdapter, command: Bool) async -> Bool? {
        let links = await links(on: adapter, except: address).links
        switch ConnectionSlots.decide(for: address, links: links, limit: adapter.limit) {
        case .available:
            return true
        case .evict(let victims):
            guard command else { return false }
            // Routine with more boards than slots: at debug, not once per rotation in the journal.
            logger.debug(
                "releasing the least recently used idle boards to free connection slots",
                metadata: ["ble.address": "\(address)", "evicted": "\(victims)", "ble.adapter": "\(adapter.name)"])
            // None was idle any more (a call took them meanwhile): wait for a link to free.
            return await release(victims) > 0 ? true : nil
        case .noSlot:
            return nil
        }
    }

    /// Releases, ahead of time, the idle links that the boards queued on the adapters for
    /// calls will need, so that each connect finds its slot free (``ConnectionSlots/releaseAhead(links:limit:waiting:)``).
    /// Runs whenever a link is done with its work, comes up or goes down, or a board is queued.
    func releaseAhead() async {
        for adapter in adapters.values where adapter.adapter.powered && !adapter.placedBoards.isEmpty {
            let (links, taken) = await links(on: adapter)
            var waiting = 0
            for board in adapter.placedBoards where !taken.contains(board) {
                if await boards[board]?.isAwaited == true { waiting += 1 }
            }
            let victims = ConnectionSlots.releaseAhead(links: links, limit: adapter.limit, waiting: waiting)
            guard !victims.isEmpty else { continue }
            logger.debug(
                "releasing idle boards ahead of the connects queued for calls",
                metadata: ["released": "\(victims)", "queued": "\(waiting)", "ble.adapter": "\(adapter.name)"])
            await release(victims)
        }
    }

    /// The links of `adapter` (but `board`'s) as the slots see them, and every board holding or
    /// taking a slot there: links BlueZ shows (ours, and anyone else's, which are never ours
    /// to release), and connects given a slot that BlueZ does not show yet (the reply to
    /// Connect may come before Connected=true: busy).
    private func links(on adapter: FleetAdapter, except board: BoardAddress? = nil) async
        -> (links: [ConnectionSlots.Link], taken: Set<BoardAddress>)
    {
        let connected = await client.mirror.tree.devices(onAdapter: adapter.path).filter(\.hasLink)
        let shown = Set(connected.compactMap { BoardAddress($0.address) })
        var links: [ConnectionSlots.Link] = []
        for other in adapter.linkingBoards where other != board && !shown.contains(other) {
            links.append(ConnectionSlots.Link(address: other, lastUsed: client.clock.now, isBusy: true))
        }
        for other in shown where other != board {
            if let known = boards[other] {
                // A board a client holds (`device.connect`) is never given away to rotate.
                var usage = await known.linkUsage
                if leases.isLeased(other) { usage.isBusy = true }
                links.append(usage)
            } else {
                links.append(ConnectionSlots.Link(address: other, lastUsed: client.clock.now, isBusy: true))
            }
        }
        return (links, shown.union(adapter.linkingBoards))
    }

    /// Gives these boards' idle links away, all at once (each takes the kernel a few tens of
    /// ms, BlueZ's Disconnect 2 s), and returns once they are down: how many were released
    /// (a board a call took meanwhile is not).
    @discardableResult
    private func release(_ victims: [BoardAddress]) async -> Int {
        let candidates = victims.compactMap { boards[$0] }
        return await withTaskGroup(of: Bool.self) { group in
            for board in candidates { group.addTask { await board.release() } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }
}
