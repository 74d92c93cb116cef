/// The adapter's connection slots (``ConnectionSlots``): a slot for the board whose turn it
/// is, and idle links released ahead of the connects queued here for calls. A board asks
/// its adapter directly; the slots held are its ledger's (``AdapterLedger/held(except:)``):
/// the links BlueZ shows through it (ours and anyone else's) and the connects given a slot.
extension FleetAdapter {
    /// Called by a board holding this adapter's connect permit: may it take a link here?
    /// For a command, evicts the least recently used idle boards here when every slot is
    /// taken; every link busy is a moment, not a failure: a command waits until one is free
    /// (its board's work done, or a link gone), until its own deadline cancels it.
    func reserveSlot(for address: BoardAddress, command: Bool, in context: FleetContext) async -> Bool {
        while !Task.isCancelled, !isRetired {
            let seen = context.slotsChanged.generation
            guard let granted = await trySlot(for: address, command: command, in: context) else {
                guard command else { return false }
                await context.slotsChanged.wait(after: seen)
                continue
            }
            return granted
        }
        return false
    }

    /// One look at the links: true (free, or freed by releasing idle boards), false (full,
    /// and not a command), nil (every link busy, or a release under way: wait).
    func trySlot(for address: BoardAddress, command: Bool, in context: FleetContext) async -> Bool? {
        let links = await links(except: address, in: context).links
        switch ConnectionSlots.decide(for: address, links: links, limit: limit) {
        case .available:
            return true
        case .evict(let victims):
            guard command else { return false }
            // Routine with more boards than slots: at debug, not once per rotation in the journal.
            context.logger.debug(
                "releasing the least recently used idle boards to free connection slots",
                metadata: ["ble.address": "\(address)", "evicted": "\(victims)", "ble.adapter": "\(name)"])
            // None was idle any more (a call took them meanwhile): wait for a link to free.
            return await release(victims, in: context) > 0 ? true : nil
        case .noSlot:
            return nil
        }
    }

    /// Releases, ahead of time, the idle links that the boards queued here for calls will
    /// need, so that each connect finds its slot free (``ConnectionSlots/releaseAhead(links:limit:waiting:)``).
    func releaseAhead(in context: FleetContext) async {
        guard adapter.powered, !isRetired, !ledger.placed.isEmpty else { return }
        let (links, ledger) = await links(in: context)
        var waiting = 0
        for board in ledger.placed where !ledger.held().contains(board) {
            if await context.board(board)?.isAwaited == true { waiting += 1 }
        }
        let victims = ConnectionSlots.releaseAhead(links: links, limit: limit, waiting: waiting)
        guard !victims.isEmpty else { return }
        context.logger.debug(
            "releasing idle boards ahead of the connects queued for calls",
            metadata: ["released": "\(victims)", "queued": "\(waiting)", "ble.adapter": "\(name)"])
        await release(victims, in: context)
    }

    /// The slots held here (but `board`'s) as links to weigh, and the ledger they were read
    /// from (its links as BlueZ shows them now): links BlueZ shows (ours, and anyone else's,
    /// which are never ours to release), and connects given a slot that BlueZ does not show
    /// yet (the reply to Connect may come before Connected=true: busy).
    private func links(except board: BoardAddress? = nil, in context: FleetContext) async
        -> (links: [ConnectionSlots.Link], ledger: AdapterLedger)
    {
        linksShown(in: await context.client.mirror.tree)
        let ledger = self.ledger
        var links: [ConnectionSlots.Link] = []
        for other in ledger.held(except: board).sorted() {
            if ledger.links.contains(other), let known = context.board(other) {
                // A board a client holds (`device.connect`) is never given away to rotate.
                var usage = await known.linkUsage
                if ledger.isLeased(other) { usage.isBusy = true }
                links.append(usage)
            } else {
                links.append(ConnectionSlots.Link(address: other, lastUsed: clock.now, isBusy: true))
            }
        }
        return (links, ledger)
    }

    /// Gives these boards' idle links away, all at once (each takes the kernel a few tens of
    /// ms, BlueZ's Disconnect 2 s), and returns once they are down: how many were released
    /// (a board a call took meanwhile is not).
    @discardableResult
    private func release(_ victims: [BoardAddress], in context: FleetContext) async -> Int {
        let candidates = victims.compactMap { context.board($0) }
        return await withTaskGroup(of: Bool.self) { group in
            for board in candidates { group.addTask { await board.release() } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }
}
