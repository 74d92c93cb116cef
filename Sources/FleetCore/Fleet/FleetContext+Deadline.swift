/// How long a call on many boards may take: its plan of rotations (``RotationPlan``).
extension FleetContext {
    /// A deadline for a call on `boards` that fits the plan: the default command timeout,
    /// or, when more of the boards need a link than there are free slots, the rotations
    /// that takes (``RotationPlan``: each board through an adapter that hears it, each adapter
    /// at its measured rotation time, after the boards of other calls queued there) with half
    /// again as margin and 2 s more. Waiting for a slot is not failing.
    func timeout(for boards: [BoardIdentity], default defaultTimeout: Duration) -> Duration {
        let powered = adapters.values.filter { $0.adapter.powered }
        // An adapter being recovered connects nothing meanwhile: its boards go to the others.
        let working = powered.filter { $0.health.isUsable }
        let usable = working.isEmpty ? powered : working
        guard !usable.isEmpty else { return defaultTimeout }
        let mine = Set(boards.map(\.address))
        let plan = usable.map { adapter in
            let ledger = adapter.ledger
            return RotationPlan.Adapter(
                path: adapter.path, free: max(0, ledger.limit - ledger.held().count),
                ahead: ledger.queued.filter { !mine.contains($0) }.count, rotation: adapter.rotationTime,
                startup: adapter.isFresh ? FleetAdapter.absentLookout : .zero)
        }
        let paths = Set(usable.map(\.path))
        let known = self.boards
        // Every board that will need a link: those without one, and those not advertising
        // now (moving to another adapter, or unheard since their adapter's reset), which
        // are heard again in a moment; one that stays away is answered early anyway.
        let needing = boards.filter { tally.mayNeedLink($0.address) }.map { board in
            (known[board.address]?.live.devices.rssi ?? [:]).filter { paths.contains($0.key) }
        }
        var rotations = RotationPlan.rotations(of: needing, on: plan)
        guard rotations > .zero else { return defaultTimeout }
        // While a board is not heard, discovery listens for it between connects
        // (``FleetAdapter/absentPause``), for as long as a refresh may take.
        if tally.anyAbsent {
            rotations += DiscoveryGovernor.refreshWindow * Int((rotations / FleetAdapter.absentPause).rounded(.down))
        }
        logger.debug(
            "the call's deadline fits its rotations",
            metadata: ["plan.rotations": "\(rotations)", "plan.boards": "\(needing.count)",
                       "plan.adapters": "\(plan.map { "\($0.path.name) free \($0.free) ahead \($0.ahead) rotation \($0.rotation)" })"])
        return max(defaultTimeout, rotations * 1.5 + .seconds(2))
    }
}
