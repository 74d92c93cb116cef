import Synchronization

/// The fleet's counts and adapter state, kept up to date by the fleet and its boards as
/// things change, so that ``Fleet/status`` is read without waiting for any actor (a
/// `daemon.status` call or an sd-notify summary never queues behind board work).
final class FleetTally: Sendable {
    private struct State {
        /// Each board's phase, with the identity of its actor: a forgotten board's late
        /// changes never count for a new board of the same address.
        var phases: [BoardAddress: (board: ObjectIdentifier, phase: BoardPhase)] = [:]
        var adapterAddress: String?
        var adapterPresent = false
        var adapterPowered = false
        var bluezAvailable = false
        var discovering = false
    }

    private let state = Mutex(State())
    let adapterName: String

    init(adapterName: String) {
        self.adapterName = adapterName
    }

    /// A board joins the fleet (adopted, or loaded from the registry).
    func add(_ address: BoardAddress, board: ObjectIdentifier, phase: BoardPhase) {
        state.withLock { $0.phases[address] = (board, phase) }
    }

    /// A board leaves the fleet (forgotten); its later phase changes are not counted.
    func remove(_ address: BoardAddress) {
        state.withLock { _ = $0.phases.removeValue(forKey: address) }
    }

    /// A known board's phase changed.
    func phaseChanged(_ address: BoardAddress, board: ObjectIdentifier, to phase: BoardPhase) {
        state.withLock { state in
            guard state.phases[address]?.board == board else { return }
            state.phases[address] = (board, phase)
        }
    }

    func adapterChanged(address: String?, present: Bool, powered: Bool, discovering: Bool) {
        state.withLock { state in
            state.adapterAddress = address
            state.adapterPresent = present
            state.adapterPowered = powered
            state.discovering = discovering
        }
    }

    func bluezChanged(available: Bool) {
        state.withLock { $0.bluezAvailable = available }
    }

    var status: FleetStatus {
        state.withLock { state in
            var ready = 0
            var linked = 0
            for (_, phase) in state.phases.values {
                if phase == .ready { ready += 1 }
                if phase == .resolving || phase == .ready || phase == .disconnecting { linked += 1 }
            }
            return FleetStatus(
                adapterName: adapterName, adapterAddress: state.adapterAddress, adapterPresent: state.adapterPresent,
                adapterPowered: state.adapterPowered, bluezAvailable: state.bluezAvailable,
                discovering: state.discovering, boardCount: state.phases.count, readyCount: ready,
                connectedCount: linked)
        }
    }
}
