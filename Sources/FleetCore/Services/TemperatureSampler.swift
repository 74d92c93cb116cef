import ServiceLifecycle

/// With more boards than slots, idle time keeps every temperature fresh, the fleet's
/// service for it: each turn reads the board in standby whose reading is oldest, once it is
/// older than half of `temperature-refresh-s` (connecting it takes the slot of the least
/// recently used idle board). Nothing while a call runs: calls go first.
struct TemperatureSampler: Service {
    let context: FleetContext

    /// How often the sampler looks for a board whose temperature is getting old.
    static let turn: Duration = .seconds(1)

    func run() async throws {
        while !Task.isCancelled {
            try await context.client.clock.sleep(for: Self.turn)
            // Each turn reads one board at most, and the next at once while they are due.
            while await sampleStaleTemperature() {}
        }
    }

    /// Reads the stalest due temperature; true when it read one.
    func sampleStaleTemperature() async -> Bool {
        guard !context.callsRunning, context.tally.bluezAvailable else { return false }
        let configuration = context.configuration
        let clock = context.client.clock
        let due = configuration.temperatureRefresh / 2
        let now = clock.now
        // A board never read counts as older than any reading. Only boards waiting for a
        // slot: not one a user disconnected (it stays so until a call needs it), nor one
        // backing off after failed connects (its backoff holds).
        let stale = context.boards.values.filter { context.tally.phase(of: $0.address) == .standby }.compactMap { board in
            let age = board.live.current.temperature?.age(at: now) ?? .seconds(Int64.max / 2)
            return age >= due ? (board: board, age: age) : nil
        }
        guard let board = stale.max(by: { $0.age < $1.age })?.board else { return false }
        let result = await FanOut.run([board.identity], timeout: configuration.connectTimeout, clock: clock) { _ in
            try await board.commands.readTemperature(maxAge: .zero)
        }
        if let error = result.outcomes.first?.error {
            context.logger.debug(
                "could not sample a temperature", metadata: ["ble.address": "\(board.address)", "error": "\(error)"])
            return false
        }
        return true
    }
}

/// While calls wait for boards beyond the free slots, idle links are given away as soon as
/// their work is done (the release runs while the connect before the next one is still
/// under way): each adapter looks whenever its slots change (``FleetAdapter/releaseAhead(in:)``).
struct SlotReleaser: Service {
    let context: FleetContext

    func run() async throws {
        let slotsChanged = context.slotsChanged
        var seen = slotsChanged.generation
        while !Task.isCancelled {
            await slotsChanged.wait(after: seen)
            seen = slotsChanged.generation
            for adapter in context.adapters.values { await adapter.releaseAhead(in: context) }
        }
    }
}
