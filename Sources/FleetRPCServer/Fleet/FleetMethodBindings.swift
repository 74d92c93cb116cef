public import FleetCore
public import FleetRPC
import JSONRPC
import FleetWire
import Foundation

/// Binds the fleet's operations to the method catalogue (`FleetMethods`): the one place
/// where wire types become FleetCore calls and FleetCore results become wire types.
public enum FleetMethodBindings {
    /// Everything the bindings need besides the fleet.
    public struct Environment: Sendable {
        public var version: String
        public var startedAt: ContinuousClock.Instant
        /// How many clients are connected now.
        public var clientCount: @Sendable () -> Int
        /// The history of readings: its state, and how to read it (`nil`: none is kept).
        public var history: History?
        /// What one connection may send and have under way.
        public var limits: DaemonStatus.Limits?
        /// The groups the daemon serves, as `daemon.status` tells them.
        public var access: DaemonStatus.Access?
        /// Characteristics one connection may follow at once (`gatt.notify` and `device.notify`).
        public var subscriptionsPerConnection: Int

        /// The history of readings as the bindings need it.
        public struct History: Sendable {
            public var status: @Sendable () -> DaemonStatus.History
            /// The series of each board (address and name) of a sensor over a span (ms since
            /// the epoch) at a resolution; throws an `RPCError` when it cannot.
            public var read:
                @Sendable (
                    _ boards: [(address: BoardAddress, name: String?)], _ sensor: String, _ since: Int64, _ until: Int64,
                    _ resolution: HistoryResolution
                ) async throws -> [HistorySeries]

            public init(
                status: @escaping @Sendable () -> DaemonStatus.History,
                read: @escaping @Sendable ([(address: BoardAddress, name: String?)], String, Int64, Int64, HistoryResolution) async throws
                    -> [HistorySeries]
            ) {
                self.status = status
                self.read = read
            }
        }

        public init(
            version: String, startedAt: ContinuousClock.Instant = .now, clientCount: @escaping @Sendable () -> Int,
            history: History? = nil, limits: DaemonStatus.Limits? = nil, access: DaemonStatus.Access? = nil,
            subscriptionsPerConnection: Int = 32
        ) {
            self.version = version
            self.startedAt = startedAt
            self.clientCount = clientCount
            self.history = history
            self.limits = limits
            self.access = access
            self.subscriptionsPerConnection = subscriptionsPerConnection
        }
    }

    /// Registers every method of `FleetMethods.all`, and `rpc.discover`, on `dispatcher`.
    public static func register(
        on dispatcher: inout JSONRPCDispatcher, fleet: Fleet, events: EventSubscriptions, environment: Environment
    ) {
        let subscriptions = ConnectionSubscriptions(limit: environment.subscriptionsPerConnection)
        dispatcher.register(FleetMethods.LedSet.self) { params, _ in
            try matched(await fleet.setLED(params.select, on: params.on, timeout: params.timeoutMs.map { .milliseconds($0) }))
        }
        dispatcher.register(FleetMethods.BoardsIdentify.self) { params, _ in
            try matched(await fleet.identify(params.select, timeout: params.timeoutMs.map { .milliseconds($0) }))
        }
        dispatcher.register(FleetMethods.TemperatureRead.self) { params, _ in
            try matched(
                await fleet.readTemperature(
                    params.select, maxAge: params.maxAgeMs.map { .milliseconds($0) },
                    timeout: params.timeoutMs.map { .milliseconds($0) }))
        }
        dispatcher.register(FleetMethods.SensorRead.self) { params, _ in
            try requireKnown(params.sensor, role: "sensor", "sensor", among: fleet.profiles.sensorNames)
            return try matched(
                await fleet.readSensor(
                    params.select, sensor: params.sensor, maxAge: params.maxAgeMs.map { .milliseconds($0) },
                    timeout: params.timeoutMs.map { .milliseconds($0) }))
        }
        dispatcher.register(FleetMethods.SwitchSet.self) { params, _ in
            try requireKnown(params.switch, role: "switch", "switch", among: fleet.profiles.switchNames)
            return try matched(
                await fleet.setSwitch(
                    params.select, name: params.switch, on: params.on, timeout: params.timeoutMs.map { .milliseconds($0) }))
        }
        dispatcher.register(FleetMethods.BoardsList.self) { params, _ in
            BoardsListResult(boards: await fleet.snapshots(params.select ?? .all).map { BoardInfo($0) })
        }
        dispatcher.register(FleetMethods.BoardsScan.self) { params, _ in
            let seen = try await fleet.scan(for: .milliseconds(Int(params.seconds * 1000)))
            return BoardsListResult(boards: seen.map { BoardInfo($0) })
        }
        dispatcher.register(FleetMethods.BoardsConnect.self) { params, _ in
            try matched(await fleet.connect(params.select))
        }
        dispatcher.register(FleetMethods.BoardsDisconnect.self) { params, _ in
            try matched(await fleet.disconnect(params.select))
        }
        dispatcher.register(FleetMethods.BoardsForget.self) { params, _ in
            try matched(await fleet.forget(params.select))
        }
        dispatcher.register(FleetMethods.BoardsAlias.self) { params, _ in
            try await fleet.setAlias(params.alias.isEmpty ? nil : params.alias, for: params.address)
            guard let board = await fleet.snapshots(Selection([.address(params.address)])).first else {
                throw RPCError(.boardNotFound, "\(params.address) was forgotten meanwhile.")
            }
            return BoardInfo(board)
        }
        dispatcher.register(FleetMethods.GattRead.self) { params, _ in
            let (service, characteristic) = try uuids(params.service, params.characteristic)
            let result = await fleet.readCharacteristic(params.boards, service: service, characteristic: characteristic)
            return try matched(result.map(GattBytes.init))
        }
        dispatcher.register(FleetMethods.GattWrite.self) { params, _ in
            let (service, characteristic) = try uuids(params.service, params.characteristic)
            return try matched(
                await fleet.writeCharacteristic(
                    params.boards, service: service, characteristic: characteristic, value: params.value,
                    withResponse: params.withResponse ?? true))
        }
        dispatcher.register(FleetMethods.GattNotify.self) { params, context in
            try await notify(params, on: context.connection, fleet: fleet, subscriptions: subscriptions)
        }
        dispatcher.register(FleetMethods.EventsSubscribe.self) { params, context in
            EventsSubscriptionResult(topics: events.subscribe(context.connection, to: Set(params.topics ?? EventTopic.allCases)))
        }
        dispatcher.register(FleetMethods.EventsUnsubscribe.self) { params, context in
            EventsSubscriptionResult(topics: events.unsubscribe(context.connection, from: params.topics.map(Set.init)))
        }
        dispatcher.register(immediate: FleetMethods.DaemonStatus.self) { _ in
            let status = fleet.status
            return FleetRPC.DaemonStatus(
                version: environment.version,
                uptimeSeconds: Double(environment.startedAt.duration(to: .now).wholeMilliseconds) / 1000,
                bluez: status.bluezAvailable,
                adapter: status.adapters.first(where: \.present).map { "\($0.name) (\($0.address ?? "?"))" },
                powered: status.adapterPowered, discovering: status.discovering,
                adapters: status.adapters.map {
                    DaemonStatus.Adapter(
                        name: $0.name, address: $0.address, present: $0.present, powered: $0.powered,
                        discovering: $0.discovering, slotsUsed: $0.links, slotsLimit: $0.limit,
                        boards: $0.boards.map(\.description), health: $0.present ? $0.health : nil,
                        lastRecovery: $0.lastRecovery.map {
                            DaemonStatus.Recovery(
                                symptom: $0.symptom, step: $0.step, started: Wire.wallClock($0.startedAt),
                                recovered: $0.recoveredAt.map { Wire.wallClock($0) })
                        })
                },
                boards: .init(known: status.boardCount, connected: status.connectedCount, ready: status.readyCount),
                clients: environment.clientCount(), history: environment.history?.status(), limits: environment.limits,
                access: environment.access)
        }
        dispatcher.register(FleetMethods.HistoryRead.self) { params, _ in
            guard let history = environment.history else {
                throw RPCError(.historyUnavailable, "This daemon keeps no history of readings.")
            }
            let sensor = params.sensor ?? BoardProfile.temperatureSensor
            try requireKnown(sensor, role: "sensor", "sensor", among: fleet.profiles.sensorNames)
            let snapshots = await fleet.snapshots()
            let match = params.select.match(snapshots.map(\.identity))
            guard !match.boards.isEmpty else {
                let named = match.unmatched.isEmpty ? "all" : match.unmatched.map { "\"\($0)\"" }.joined(separator: ", ")
                throw RPCError(.boardNotFound, "No board matches \(named); `blectl boards` lists the known boards.")
            }
            let since = params.since.milliseconds
            if let until = params.until, until.milliseconds < since {
                throw RPCError(.invalidParams, "until: it comes before since; give a span that starts before it ends.")
            }
            let until = params.until?.milliseconds ?? Int64((Date().timeIntervalSince1970 * 1000).rounded())
            var resolution = params.resolution ?? .suited(toSpanMilliseconds: until - since)
            // Each board's figures with the decimals its profile gives the sensor.
            let profiles = Dictionary(snapshots.map { ($0.address, $0.profile) }, uniquingKeysWith: { first, _ in first })
            let boards = match.boards.map { ($0.address, $0.alias ?? $0.name) }
            var read: [HistorySeries]
            do {
                read = try await history.read(boards, sensor, since, until, resolution)
            } catch let error as RPCError where error == FleetMethods.HistoryRead.tooManyRawPoints && params.resolution == nil {
                // Raw was the daemon's choice, not the caller's: 5-minute buckets, said in the result.
                resolution = .fiveMinutes
                read = try await history.read(boards, sensor, since, until, resolution)
            }
            let series = read.map { series in
                series.told(withDecimals: profiles[series.address]?.sensor(named: sensor)?.decimals)
            }
            return HistoryResult(
                sensor: sensor, since: since, until: until, resolution: resolution, series: series, unmatched: match.unmatched)
        }
        DeviceBindings(fleet: fleet, subscriptions: subscriptions).register(on: &dispatcher)
        DevicePairingBindings.register(on: &dispatcher, fleet: fleet)
        dispatcher.registerDiscovery(FleetMethods.Discover.self, title: "blefleet", version: environment.version)
    }

    /// `gatt.notify`: one subscription per board and characteristic on a connection, within
    /// its bound; the boards it follows already answer ok as they are.
    static func notify(
        _ params: FleetMethods.GattNotify.Params, on connection: RPCConnection, fleet: Fleet,
        subscriptions: ConnectionSubscriptions
    ) async throws -> FleetResult<Done> {
        let (service, characteristic) = try uuids(params.service, params.characteristic)
        // One subscription per board and characteristic on a connection: the boards it
        // follows already answer ok as they are; only the others are subscribed.
        let snapshots = await fleet.snapshots()
        let match = params.boards.match(snapshots.map(\.identity))
        func key(_ address: BoardAddress) -> ConnectionSubscriptions.Key {
            .board(address, service: service, characteristic: characteristic)
        }
        let claim: ConnectionSubscriptions.Claim
        do {
            claim = try subscriptions.claim(match.boards.map { key($0.address) }, on: connection)
        } catch {
            throw RPCError(.limitReached, error.message)
        }
        let new = Set(claim.new)
        let fresh = match.boards.filter { new.contains(key($0.address)) }
        var subscribed: [BoardAddress: BoardOutcome<Done>] = [:]
        if !fresh.isEmpty {
            let result = await fleet.notifications(
                Selection(fresh.map { .address($0.address) }), service: service, characteristic: characteristic)
            for outcome in result.outcomes {
                subscribed[outcome.address] = outcome.map { _ in Done() }
                guard let values = outcome.value else {
                    subscriptions.remove(key(outcome.address), on: connection)
                    continue
                }
                let (address, name) = (outcome.address, outcome.name ?? "")
                let outbox = ValueOutbox<[UInt8]>()
                let forwarding = Task {
                    await withDiscardingTaskGroup { group in
                        group.addTask {
                            await follow(values, of: address, service: service, characteristic: characteristic, fleet: fleet) {
                                outbox.put($0)
                                return !connection.isClosed
                            }
                            outbox.finish()
                        }
                        await outbox.deliver(to: connection) { value, lost in
                            connection.notify(
                                method: GattValueNotification.method,
                                params: GattValueNotification(
                                    address: address.rawValue, name: name, service: service.uuidString,
                                    characteristic: characteristic.uuidString, value: HexBytes.encode(value),
                                    time: Date().formatted(.iso8601), dropped: lost > 0 ? lost : nil))
                        }
                    }
                }
                subscriptions.install(key(address), on: connection) { forwarding.cancel() }
            }
            for board in fresh where subscribed[board.address] == nil {
                subscriptions.remove(key(board.address), on: connection)
            }
        }
        let outcomes = match.boards.map { board in
            subscribed[board.address]
                ?? BoardOutcome(address: board.address, name: board.alias ?? board.name, result: .success(Done()), latency: .zero)
        }
        guard !outcomes.isEmpty else {
            return try matched(FleetResult<Done>(outcomes: [], unmatched: match.unmatched))
        }
        return FleetResult(outcomes: outcomes, unmatched: match.unmatched)
    }

    /// Forwards a board's values with `send` until cancelled or `send` refuses; when the link
    /// drops (the stream ends), subscribes again each time the board is ready again, so a
    /// `gatt.notify` subscription survives reconnects as the daemon's own temperature one does.
    static func follow(
        _ first: NotificationStream, of address: BoardAddress, service: GattUUID,
        characteristic: GattUUID, fleet: Fleet, send: @escaping @Sendable ([UInt8]) -> Bool
    ) async {
        // Subscribed before the first stream can end, so no return to ready is missed.
        let ready = fleet.events.subscribe(bufferSize: 8) { event in
            if case .boardPhaseChanged(address, _, .ready) = event { true } else { false }
        }
        var readyIterator = ready.makeAsyncIterator()
        var current: NotificationStream? = first
        while !Task.isCancelled {
            if let stream = current {
                do {
                    for try await value in stream where !send(value) { return }
                } catch {}
                current = nil
                continue
            }
            guard await readyIterator.next() != nil, !Task.isCancelled else { return }
            let again = await fleet.notifications(
                Selection([.address(address)]), service: service, characteristic: characteristic,
                timeout: .seconds(10))
            current = again.outcomes.first?.value
        }
    }

    // MARK: Checks

    static func uuids(_ service: String, _ characteristic: String) throws -> (GattUUID, GattUUID) {
        guard let serviceUUID = GattUUID(service) else {
            throw RPCError(.invalidParams, "service: \"\(service)\" is not a UUID (like FFE0 or 0000ffe0-0000-1000-8000-00805f9b34fb).")
        }
        guard let characteristicUUID = GattUUID(characteristic) else {
            throw RPCError(.invalidParams, "characteristic: \"\(characteristic)\" is not a UUID (like FFE1).")
        }
        return (serviceUUID, characteristicUUID)
    }

    /// A sensor or switch no profile has is the call's mistake (a typo), not each board's.
    static func requireKnown(_ name: String, role: String, _ param: String, among known: [String]) throws {
        guard !known.contains(name) else { return }
        throw RPCError(
            .invalidParams,
            "\(param): no board profile has a \(role) \"\(name)\"; known: \(known.joined(separator: ", ")).")
    }

    /// A call whose selection matched no board at all fails as a whole (-32001); else its
    /// result, as it goes on the wire.
    static func matched<Value>(_ result: FleetResult<Value>) throws -> FleetResult<Value> {
        guard result.outcomes.isEmpty else { return result }
        let named = result.unmatched.isEmpty ? "all" : result.unmatched.map { "\"\($0)\"" }.joined(separator: ", ")
        throw RPCError(.boardNotFound, "No board matches \(named); `blectl boards` lists the known boards.")
    }
}
