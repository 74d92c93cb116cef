import BlueZ
import Logging
import ServiceLifecycle

/// Stuck adapters found and recovered (``AdapterHealth``), the fleet's service for it: what
/// the fleet sees of each controller goes to its health (once a second: what each adapter
/// heard, its links' traffic; every few seconds: a question to its controller through the
/// kernel), and the steps its health asks for are carried out here, while placement gives
/// its boards to the other adapters.
struct AdapterRecovery: Service {
    let context: FleetContext

    /// How often each adapter's controller is asked about one of its links.
    static let probeInterval: Duration = .seconds(4)

    func run() async throws {
        let clock = context.client.clock
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [context] in
                for await (path, action) in context.healthReports.stream { act(action, onAdapter: path) }
            }
            group.addTask {
                // Silence, and each recovery step's window, judged once a second.
                while !Task.isCancelled {
                    try await clock.sleep(for: .seconds(1))
                    checkAdapterHealth()
                }
            }
            group.addTask {
                // A controller with links answers the kernel's questions about them.
                var turn = 0
                while !Task.isCancelled {
                    try await clock.sleep(for: Self.probeInterval)
                    probeAdapters(turn: turn)
                    turn &+= 1
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// Once a second: what each adapter heard since, and whether it went silent while its
    /// boards are heard elsewhere, or its links fell silent while other adapters' traffic
    /// goes on; the running recovery step's window.
    func checkAdapterHealth() {
        let now = context.client.clock.now
        let live = context.boards.mapValues { $0.live.current }
        let heard = live.values.map(\.devices.heardAt)
        for adapter in context.adapters.values {
            let path = adapter.path
            if let last = heard.compactMap({ $0[path] }).max() { adapter.health.heard(at: last) }
            // Boards this adapter heard, heard lately through another.
            let thresholds = adapter.health.current.thresholds
            let elsewhere = heard.contains { times in
                times[path] != nil && Self.heard(times, elsewhereThan: path, within: thresholds.silence, now: now)
            }
            let discovering = adapter.adapter.powered && adapter.adapter.discovering
            let carried = Self.linksCarried(
                through: path, readyLinks: context.tally.ready(adapter.ledger.links).compactMap { live[$0] },
                everyBoard: live.values, thresholds: thresholds, now: now)
            adapter.health.observe {
                $0.tick(now: $1, discovering: discovering, heardElsewhere: elsewhere, linksCarried: carried)
            }
        }
    }

    /// The newest notification over the adapter's chatty links (of `readyLinks`, the boards
    /// linked through it: those whose last two notifications came through it at most
    /// ``AdapterHealth/Thresholds/chattyGap`` apart), when there are enough of them to judge
    /// and another adapter heard or carried something lately (so that bluetoothd, the bus
    /// and this daemon are seen to deliver); nil otherwise.
    static func linksCarried(
        through path: AdapterPath, readyLinks: [BoardLive.State], everyBoard: some Collection<BoardLive.State>,
        thresholds: AdapterHealth.Thresholds, now: ContinuousClock.Instant
    ) -> ContinuousClock.Instant? {
        let chatty = readyLinks.compactMap { state -> ContinuousClock.Instant? in
            guard let carried = state.carried, carried.adapter == path, let gap = carried.gap, gap <= thresholds.chattyGap
            else { return nil }
            return carried.at
        }
        guard chatty.count >= thresholds.silentLinks else { return nil }
        let othersDeliver = everyBoard.contains { state in
            if let carried = state.carried, carried.adapter != path, carried.at.duration(to: now) < thresholds.silence {
                return true
            }
            return heard(state.devices.heardAt, elsewhereThan: path, within: thresholds.silence, now: now)
        }
        return othersDeliver ? chatty.max() : nil
    }

    /// Every few seconds: each adapter with links is asked about one of them through the
    /// kernel, which asks the controller (a fully connected fleet advertises nothing, so
    /// silence cannot tell a stuck controller there), and one with no link for its
    /// controller's clock (an adapter that only listens is otherwise judged by nothing until
    /// a connect through it times out); an answer is a command completed, none in time a
    /// command timed out.
    func probeAdapters(turn: Int) {
        // The kernel queues the question behind a connect under way (LE Create Connection
        // holds its queue until the link is up): only an adapter with no connect at the
        // controller (no connect permit out), before and after, is judged by the answer.
        // Boards queued for a permit do not count: with more boards than slots there always
        // are some, and a controller that hangs then was never asked.
        func idle(_ adapter: FleetAdapter) -> Bool { adapter.scheduler.runningCount == 0 }
        let client = context.client
        let logger = context.logger
        let tally = context.tally
        for adapter in context.adapters.values where adapter.adapter.powered && idle(adapter) {
            let current = adapter.adapter
            Task {
                // A question unanswered is asked again at once (not a probe interval later): a
                // controller whose transport stalled is found in two of the kernel's command
                // timeouts, and reset in time to serve its boards again within 15 s (issue 52).
                for again in [false, true] {
                    let aboutALink = !tally.ready(adapter.ledger.links).isEmpty
                    do {
                        if try await client.probeController(current, turn: turn &+ (again ? 1 : 0)) {
                            adapter.health.command(completed: true)
                        }
                        return
                    } catch {
                        guard idle(adapter) else { return }
                        logger.debug("the controller did not answer", metadata: ["ble.adapter": "\(adapter.name)", "error": "\(error)"])
                        adapter.health.command(completed: false, aboutALink: aboutALink)
                        guard adapter.health.isUsable else { return }
                    }
                }
            }
        }
    }

    /// Whether a board whose adapters last heard it at `times` was heard through an adapter
    /// other than `path` within `window`.
    static func heard(
        _ times: [AdapterPath: ContinuousClock.Instant], elsewhereThan path: AdapterPath, within window: Duration,
        now: ContinuousClock.Instant
    ) -> Bool {
        times.contains { $0.key != path && $0.value.duration(to: now) < window }
    }

    /// Carries out what an adapter's health asks.
    func act(_ action: AdapterHealth.Action, onAdapter path: AdapterPath) {
        guard let adapter = context.adapter(path) else { return }
        let metadata: [String: Logger.MetadataValue] = ["ble.adapter": "\(adapter.name)"]
        switch action {
        case .none:
            return
        case .perform(let step, let symptom):
            // Said once per recovery and step, not once per symptom seen.
            context.logger.warning(
                "adapter stuck (\(symptom.rawValue)): \(step.words); its boards are served by the other adapters meanwhile",
                metadata: metadata)
            // A controller that answers no command, or hears nothing, carries nothing over
            // its links either (and a power cycle or reset ends them): their boards move to
            // the adapters that hear them now, not after the kernel gives the links up (tens
            // of seconds). Only one whose connects fail keeps its links through the restart
            // of its discovery.
            if symptom != .connectsFail || step >= .powerCycle {
                let answersNothing = step == .reset || symptom == .commandsTimeOut || symptom == .linksSilent
                for board in context.boards.values {
                    Task { await board.update { $0.adapterStuck(path, answersNothing: answersNothing, now: $1) } }
                }
            }
            Task { await perform(step, on: adapter) }
        case .recovered(let recovery):
            context.logger.notice(
                "adapter works again after \(recovery.step.words)", metadata: metadata.merging(["symptom": "\(recovery.symptom.rawValue)"]) { $1 })
            for board in context.boards.values { Task { await board.update { $0.connectionRoomAppeared(now: $1) } } }
        case .gaveUp(let symptom):
            context.logger.error(
                "adapter did not recover (\(symptom.rawValue)); its boards are served by the other adapters, and a reset is tried again every minute",
                metadata: metadata)
        }
    }

    /// One recovery step on `adapter`; what the controller shows comes back as evidence.
    private func perform(_ step: RecoveryStep, on adapter: FleetAdapter) async {
        switch step {
        case .restartDiscovery:
            await adapter.discovery.restart()
        case .powerCycle:
            let current = adapter.adapter
            do {
                try await context.client.setPowered(false, adapter: current, timeout: .seconds(4))
                try await context.client.setPowered(true, adapter: current, timeout: .seconds(6))
                adapter.health.stepCompleted(.powerCycle)
                await adapter.discovery.sessionEnded()
            } catch {
                context.logger.debug("power cycle failed", metadata: ["ble.adapter": "\(adapter.name)", "error": "\(error)"])
                adapter.health.observe { $0.stepFailed(.powerCycle, now: $1) }
            }
        case .reset:
            do {
                try await context.client.resetController(adapter.adapter)
                try await context.client.setPowered(true, adapter: adapter.adapter, timeout: .seconds(6))
                adapter.health.stepCompleted(.reset)
                await adapter.discovery.sessionEnded()
            } catch {
                context.logger.debug("reset failed", metadata: ["ble.adapter": "\(adapter.name)", "error": "\(error)"])
            }
        }
    }
}

/// What boards report of their adapters' controllers.
extension FleetContext {
    /// What got no answer from an adapter's controller.
    enum Unanswered: String, Sendable {
        case connect = "a connect"
        /// The release of a link: the kernel's disconnect timed out, or the link stayed up.
        case release = "a release"
    }

    /// A connect or release of `board`'s link through the adapter at `path` got no answer in its time:
    /// the controller is asked about one of its links now. Unanswered too, that is two
    /// commands timed out (the first and the question): the adapter is stuck. Answered, the
    /// board was the one not there. With no link to ask about, it counts as one command
    /// timed out when another adapter heard the board lately (it was there to connect). An
    /// adapter always connecting (more boards than slots) is found this way: a rotation
    /// releases a link before each connect.
    func gotNoAnswer(to what: Unanswered, for board: BoardAddress, onAdapter path: AdapterPath) async {
        guard let adapter = adapter(path) else { return }
        let metadata: Logger.Metadata = ["ble.adapter": "\(adapter.name)", "ble.address": "\(board)"]
        do {
            if try await client.probeController(adapter.adapter, turn: 0) {
                adapter.health.command(completed: true)
                return
            }
        } catch BlueZError.timeout {
            logger.debug("neither \(what.rawValue) nor the question after it got an answer", metadata: metadata)
            adapter.health.command(completed: false)
            adapter.health.command(completed: false)
            return
        } catch {
            logger.debug("could not ask the controller", metadata: metadata.merging(["error": "\(error)"]) { $1 })
            return
        }
        guard let times = self.board(board)?.live.devices.heardAt,
            AdapterRecovery.heard(times, elsewhereThan: adapter.path, within: adapter.health.current.thresholds.silence, now: client.clock.now)
        else { return }
        logger.debug("\(what.rawValue) got no answer although another adapter hears the board", metadata: metadata)
        adapter.health.command(completed: false)
    }

    /// A connect through `adapter` failed: its health weighs it against the other adapters'
    /// connects.
    func connectFailed(_ board: BoardAddress, on adapter: FleetAdapter) {
        let window = adapter.health.current.thresholds.othersWindow
        let othersConnected = adapters.values.contains { other in
            other !== adapter && (other.health.lastConnected.map { client.clock.since($0) < window } ?? false)
        }
        adapter.health.observe { $0.connectFailed(board, now: $1, othersConnected: othersConnected) }
    }

    /// Disconnects `board`'s link through `device`; a disconnect that gets no answer asks
    /// whether its controller answers at all (``gotNoAnswer(to:for:onAdapter:)``).
    func release(_ device: BlueZDevice, of board: BoardAddress) async {
        do {
            try await client.disconnect(device)
        } catch BlueZError.timeout {
            await gotNoAnswer(to: .release, for: board, onAdapter: device.adapterPath)
        } catch {}
    }
}

extension RecoveryStep {
    /// As the journal says it.
    var words: String {
        switch self {
        case .restartDiscovery: "restarting discovery"
        case .powerCycle: "powering it off and on"
        case .reset: "resetting the controller through the kernel"
        }
    }
}
