import BlueZ
import Synchronization

/// The fleet's counts, kept up to date by the fleet and its boards as things change, so that
/// ``Fleet/status`` is read without waiting for any actor (a `daemon.status` call or an
/// sd-notify summary never queues behind board work). The adapters are not kept here: each
/// ``FleetAdapter`` is asked when the status is read (its state, its health, and which
/// boards hold its slots, its ledger's ``AdapterLedger/held(except:)``).
final class FleetTally: Sendable {
    private struct BoardEntry {
        /// The identity of the board's actor: a forgotten board's late changes never count
        /// for a new board of the same address.
        var board: ObjectIdentifier
        var phase: BoardPhase
    }

    /// An adapter as the status shows it, read from its ``FleetAdapter`` (or, for one the
    /// selection names that BlueZ does not show, from the configuration) when the status is read.
    struct AdapterEntry: Sendable {
        var path: AdapterPath?
        var name: String
        var address: String?
        var powered: Bool
        var discovering: Bool
        var limit: Int
        var health: AdapterCondition = .ok
        var lastRecovery: AdapterHealth.Recovery?
        /// The slots its ledger holds now (links up, connects given a slot), by board.
        var held: Set<BoardAddress> = []
    }

    private struct State {
        var boards: [BoardAddress: BoardEntry] = [:]
        var bluezAvailable = false
    }

    private let state = Mutex(State())
    let adapterSelection: String

    init(adapterSelection: String) {
        self.adapterSelection = adapterSelection
    }

    /// A board joins the fleet (adopted, or loaded from the registry).
    func add(_ address: BoardAddress, board: ObjectIdentifier, phase: BoardPhase) {
        state.withLock { $0.boards[address] = BoardEntry(board: board, phase: phase) }
    }

    /// A board leaves the fleet (forgotten); its later phase changes are not counted.
    func remove(_ address: BoardAddress) {
        state.withLock { _ = $0.boards.removeValue(forKey: address) }
    }

    /// A known board's phase changed.
    func boardChanged(_ address: BoardAddress, board: ObjectIdentifier, phase: BoardPhase) {
        state.withLock { state in
            guard state.boards[address]?.board == board else { return }
            state.boards[address]?.phase = phase
        }
    }

    /// A known board's phase.
    func phase(of address: BoardAddress) -> BoardPhase? {
        state.withLock { $0.boards[address]?.phase }
    }

    /// Whether any board is not advertising (powered off, out of range): discovery looks for it.
    var anyAbsent: Bool {
        state.withLock { state in state.boards.values.contains { $0.phase == .absent } }
    }

    /// How many of `addresses` hold no link now but could be given one (present, adapter
    /// on): each needs a connection slot before a command reaches it.
    func withoutLink(_ addresses: [BoardAddress]) -> Int {
        state.withLock { state in
            addresses.filter { state.boards[$0]?.phase.needsSlot == true }.count
        }
    }

    /// Whether `address` may need a connection slot before a call reaches it: it has no
    /// usable link yet (``BoardPhase/needsSlot``), or it is not advertising now.
    func mayNeedLink(_ address: BoardAddress) -> Bool {
        state.withLock { state in
            guard let phase = state.boards[address]?.phase else { return false }
            return phase.needsSlot || phase == .absent
        }
    }

    /// Why boards unfinished at a call's deadline did not finish, for those that were still
    /// waiting for a connection slot (not gone, not failing): each is told so, with the
    /// adapter it waited on and how many boards were ahead of it in that queue, or that its
    /// connect was under way (`queue`), rather than a bare timeout.
    func waitingForSlots(
        _ unfinished: [BoardIdentity], deadline: Duration?, queue: (BoardAddress) -> SlotQueuePlace?
    ) -> [BoardAddress: FleetError] {
        let hint = deadline == nil ? "" : "; a longer timeout, or none, lets the rotation finish"
        var errors: [BoardAddress: FleetError] = [:]
        for board in unfinished where withoutLink([board.address]) == 1 {
            let message =
                switch queue(board.address) {
                case .queued(let adapter, let ahead)?:
                    "Still waiting for a connection slot on \(adapter.name), \(ahead) ahead of it, at the deadline"
                case .connecting(let adapter)?: "Its turn had come: it was connecting through \(adapter.name) at the deadline"
                case nil: "Still waiting for a connection slot at the deadline"
                }
            errors[board.address] = FleetError(.timeout, "\(message) (it is not gone\(hint)).")
        }
        return errors
    }

    /// Those of `links` (an adapter's, as its ledger holds them) that are boards whose link is
    /// ready.
    func ready(_ links: some Collection<BoardAddress>) -> [BoardAddress] {
        state.withLock { state in links.filter { state.boards[$0]?.phase == .ready } }
    }

    /// Whether BlueZ is on the bus (as ``FleetMirror`` last saw it).
    var bluezAvailable: Bool { state.withLock { $0.bluezAvailable } }

    func bluezChanged(available: Bool) {
        state.withLock { $0.bluezAvailable = available }
    }

    /// The fleet's state now, with its `adapters` as they stand now.
    func status(adapters: [AdapterEntry]) -> FleetStatus {
        state.withLock { state in
            var ready = 0
            var linked = 0
            for entry in state.boards.values {
                if entry.phase == .ready { ready += 1 }
                if entry.phase == .resolving || entry.phase == .ready || entry.phase == .disconnecting { linked += 1 }
            }
            let adapters = adapters.sorted { $0.name < $1.name }.map { entry in
                FleetStatus.Adapter(
                    name: entry.name, address: entry.address, present: entry.path != nil, powered: entry.powered,
                    discovering: entry.discovering,
                    // Its boards: the fleet's boards among the slots it holds.
                    boards: entry.held.compactMap { state.boards[$0]?.phase.holdsSlot == true ? $0 : nil }
                        .sorted { $0.description < $1.description },
                    limit: entry.limit, health: entry.health, lastRecovery: entry.lastRecovery)
            }
            return FleetStatus(
                adapters: adapters, bluezAvailable: state.bluezAvailable, boardCount: state.boards.count,
                readyCount: ready, connectedCount: linked, adapterSelection: adapterSelection)
        }
    }
}

/// Where a board stands in an adapter's queue for a connection slot.
enum SlotQueuePlace: Sendable, Hashable {
    /// Waiting, with this many boards ahead of it.
    case queued(adapter: AdapterPath, ahead: Int)
    /// Given its slot: its connect is under way.
    case connecting(adapter: AdapterPath)
}
