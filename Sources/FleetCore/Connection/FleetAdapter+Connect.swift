import BlueZ
import Logging

/// A board's connect through this adapter, in the adapter's queue: BlueZ's own adapter
/// keeps a device's pending connect the same way (`src/adapter.c`). The board decides when
/// to connect and where (``FleetContext/placement(for:rssi:)``); the adapter runs
/// the connect and tells how it ended.
extension FleetAdapter {
    /// How long discovery listens, when it runs for a moment in a long burst of connects,
    /// for boards that were not advertising: a board advertises every 100 ms or so, and a
    /// controller reports it in its first scan window.
    static let absentLookout: Duration = .seconds(1)
    /// While a board is not heard (switched off, out of range), discovery listens for it
    /// after this long paused for connects, not only after ``DiscoveryGovernor/longestPause``:
    /// a board switched on again during a long burst of rotations is otherwise not heard for
    /// 20 s, and a call in that time answers it absent (the simulation found that, seed 928).
    /// Call deadlines count these moments (``FleetContext/timeout(for:default:)``).
    static let absentPause: Duration = .seconds(10)

    /// How one connect through the adapter ended.
    enum ConnectOutcome {
        case connected
        /// No connection slot, and nobody waits for the board: no `Connect` was called.
        case noSlot
        case failed(BlueZError)
        /// Cancelled while queued: whoever cancelled has told the board's machine.
        case cancelled
    }

    /// Connects `board` through this adapter on `device`, once its turn comes: discovery
    /// stays off here from the moment a connect is queued until the last queued one is done
    /// (connecting while discovering waits for a discovery-window boundary), the adapter's
    /// connect permit is held until the link is up, and a slot is taken before `Connect`
    /// (``reserveSlot(for:command:in:)``). `full`: placement found no free slot anywhere.
    func connect(_ board: Board, device: BlueZDevice, full: Bool, command: Bool, in context: FleetContext) async
        -> ConnectOutcome
    {
        let address = board.address
        await discovery.hold()
        do {
            try await scheduler.acquire()
        } catch {
            await discovery.release()
            return .cancelled
        }
        // The boards waiting in line on this adapter (this one included) must stay known, and
        // boards not advertising when discovery paused may be back.
        let path = self.path
        let waiting = Set(ledger.placed.map(\.rawValue) + [address.rawValue])
        let absent = context.tally.anyAbsent
        await discovery.refreshIfPausedLong(
            atLeast: absent ? Self.absentLookout : .zero, pausedFor: absent ? Self.absentPause : DiscoveryGovernor.longestPause
        ) { tree in
            tree.devices(onAdapter: path).allSatisfy { !waiting.contains($0.address) || $0.hasLink || $0.rssi != nil }
        }
        // The permit goes back as soon as the link is up: the next connect on the adapter
        // runs while this board's services resolve (its slot stays counted: `linking`).
        let permit = ConnectPermit(adapter: self, rotation: full)
        let outcome = await attempt(board, device: device, command: command, in: context) {
            permit.release(linked: true)
        }
        if case .connected = outcome { permit.resolved() }
        // A connect that got no answer at all: the controller is asked at once, the permit
        // still held so that no other connect queues in front of the question (a controller
        // that stops answering leaves every connect pending until it times out, and keeps
        // the periodic question away: that waits for an adapter connecting nothing).
        if case .failed(.timeout) = outcome, !Task.isCancelled {
            await context.gotNoAnswer(to: .connect, for: address, onAdapter: path)
        }
        permit.release()
        await discovery.release()
        return outcome
    }

    /// A connect of `board` through this adapter failed (`errorClass`): counted against the
    /// adapter for this board (placement weighs it) and, when the controller may be at
    /// fault, against its health; a link BlueZ shows that never resolved (the kernel kept it
    /// while bluetoothd restarted, or the connect was half made) is released, so the retry
    /// starts clean and no link is left that the fleet does not use.
    nonisolated(nonsending) func connectFailed(
        _ board: BoardAddress, device: BlueZDevice, _ errorClass: ConnectErrorClass, in context: FleetContext,
        logger: Logger
    ) async {
        guard !isRetired else { return }
        if errorClass != .outOfResources { noteFailure(of: board) }
        if errorClass == .transient || errorClass == .permanent { context.connectFailed(board, on: self) }
        if errorClass == .transient, await context.client.mirror.tree.hasLink(at: device.path) == true {
            logger.info("releasing a link that never resolved", metadata: ["ble.adapter": "\(name)"])
            try? await context.client.disconnect(device)
        }
    }

    /// A link of `board` through this adapter fell as soon as it came up: a failed connect,
    /// said like any (a streak's first at warning, the rest at debug) and weighed by placement
    /// for this board, not by the adapter's health (all of an adapter's young links also fall
    /// when someone powers it off). False, and nothing counted, when the adapter is off: the
    /// link fell with it (BlueZ told the link's end after the fleet took the adapter's).
    func linkFellEarly(of board: BoardAddress, attempts: Int, logger: Logger) -> Bool {
        guard adapter.powered else { return false }
        logger.log(
            level: attempts <= 1 ? .warning : .debug, "connect failed",
            metadata: ["error": "the link was lost as soon as it came up", "error.class": "\(ConnectErrorClass.transient.rawValue)",
                       "ble.adapter": "\(name)"])
        noteFailure(of: board)
        return true
    }

    /// With the connect permit held: take a link slot here, then connect until resolved;
    /// `linkUp` is called once the link is up (the permit may go back then).
    private func attempt(
        _ board: Board, device: BlueZDevice, command: Bool, in context: FleetContext,
        linkUp: @escaping @Sendable () -> Void
    ) async -> ConnectOutcome {
        guard !Task.isCancelled else { return .failed(.timeout("cancelled")) }
        let gone = BlueZError.objectVanished("\(name) is gone")
        guard !isRetired else { return .failed(gone) }
        // A command may have come while the automatic connect was queued.
        let command = command ? true : await board.isAwaited
        guard await reserveSlot(for: board.address, command: command, in: context) else {
            guard !isRetired else { return .failed(gone) }
            // Nothing called Connect: without a command, the board waits its turn; a command
            // finds every link busy with work.
            guard command, await board.isAwaited else { return .noSlot }
            return .failed(.connectionFailed(
                .concurrentConnectionLimit, "all \(limit) connection slots of \(name) are in use"))
        }
        // Its slot is held from here until its connect is done (``unclaim(_:)``).
        linking(board.address)
        await board.update { [path] in $0.connectStarts(through: path, device: device, now: $1) }
        do {
            try await context.client.connect(device, timeout: context.configuration.connectTimeout, linkUp: linkUp)
            return .connected
        } catch {
            return .failed(BlueZError(error))
        }
    }
}
