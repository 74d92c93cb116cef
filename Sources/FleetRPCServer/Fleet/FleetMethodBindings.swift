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
        /// The MQTT bridge's state, when one is configured.
        public var mqttStatus: @Sendable () -> DaemonStatus.MQTT?

        public init(
            version: String, startedAt: ContinuousClock.Instant = .now, clientCount: @escaping @Sendable () -> Int,
            mqttStatus: @escaping @Sendable () -> DaemonStatus.MQTT? = { nil }
        ) {
            self.version = version
            self.startedAt = startedAt
            self.clientCount = clientCount
            self.mqttStatus = mqttStatus
        }
    }

    /// Registers every method of `FleetMethods.all`, and `rpc.discover`, on `dispatcher`.
    public static func register(
        on dispatcher: inout JSONRPCDispatcher, fleet: Fleet, events: EventSubscriptions, environment: Environment
    ) {
        dispatcher.register(FleetMethods.LedSet.self) { params, _ in
            let selection = try coreSelection(params.select)
            let result = await fleet.setLED(selection, on: params.on, timeout: params.timeoutMs.map { .milliseconds($0) })
            // A board that could not be switched now gets the LED when it is back.
            return try outcomes(result, selection: params.select, pending: { $0.retryable })
        }
        dispatcher.register(FleetMethods.TemperatureRead.self) { params, _ in
            let selection = try coreSelection(params.select)
            let result = await fleet.readTemperature(
                selection, maxAge: params.maxAgeMs.map { .milliseconds($0) },
                timeout: params.timeoutMs.map { .milliseconds($0) })
            try requireMatch(result.outcomes.isEmpty, result.unmatched, params.select)
            let entries = result.outcomes.map { outcome in
                TemperatureOutcome(
                    address: outcome.address.rawValue, name: outcome.name ?? "", ok: outcome.succeeded,
                    celsius: outcome.value?.value.degrees,
                    ageMs: outcome.value.map { Wire.milliseconds($0.age) },
                    error: outcome.error.map(BoardError.init), latencyMs: Wire.milliseconds(outcome.latency))
            }
            return FleetRPC.FleetResult(results: entries).unmatched(result.unmatched)
        }
        dispatcher.register(FleetMethods.SensorRead.self) { params, _ in
            let selection = try coreSelection(params.select)
            try requireKnown(params.sensor, role: "sensor", "sensor", among: fleet.profiles.sensorNames)
            let result = await fleet.readSensor(
                selection, sensor: params.sensor, maxAge: params.maxAgeMs.map { .milliseconds($0) },
                timeout: params.timeoutMs.map { .milliseconds($0) })
            try requireMatch(result.outcomes.isEmpty, result.unmatched, params.select)
            let entries = result.outcomes.map { outcome in
                SensorOutcome(
                    address: outcome.address.rawValue, name: outcome.name ?? "", ok: outcome.succeeded,
                    sensor: params.sensor, value: outcome.value?.value, unit: outcome.value?.sensor.unit,
                    ageMs: outcome.value.map { Wire.milliseconds($0.age) },
                    error: outcome.error.map(BoardError.init), latencyMs: Wire.milliseconds(outcome.latency))
            }
            return FleetRPC.FleetResult(results: entries).unmatched(result.unmatched)
        }
        dispatcher.register(FleetMethods.SwitchSet.self) { params, _ in
            let selection = try coreSelection(params.select)
            try requireKnown(params.switch, role: "switch", "switch", among: fleet.profiles.switchNames)
            let result = await fleet.setSwitch(
                selection, name: params.switch, on: params.on, timeout: params.timeoutMs.map { .milliseconds($0) })
            // The LED of a board that could not be switched now is switched when it is back.
            let remembered = params.switch == BoardProfile.ledSwitch
            return try outcomes(result, selection: params.select, pending: { remembered && $0.retryable })
        }
        dispatcher.register(FleetMethods.BoardsList.self) { params, _ in
            let selection = try params.select.map(coreSelection) ?? .all
            return BoardsListResult(boards: await fleet.snapshots(selection).map { BoardInfo($0) })
        }
        dispatcher.register(FleetMethods.BoardsScan.self) { params, _ in
            let seen = try await fleet.scan(for: .milliseconds(Int(params.seconds * 1000)))
            return BoardsListResult(boards: seen.map { BoardInfo($0) })
        }
        dispatcher.register(FleetMethods.BoardsConnect.self) { params, _ in
            let selection = try coreSelection(params.select)
            return try outcomes(await fleet.connect(selection), selection: params.select)
        }
        dispatcher.register(FleetMethods.BoardsDisconnect.self) { params, _ in
            let selection = try coreSelection(params.select)
            return try outcomes(await fleet.disconnect(selection), selection: params.select)
        }
        dispatcher.register(FleetMethods.BoardsForget.self) { params, _ in
            let selection = try coreSelection(params.select)
            return try outcomes(await fleet.forget(selection), selection: params.select)
        }
        dispatcher.register(FleetMethods.BoardsAlias.self) { params, _ in
            guard let address = FleetCore.BoardAddress(params.address) else {
                throw RPCError(.invalidParams, "\"\(params.address)\" is not a Bluetooth address like AA:BB:CC:DD:EE:FF.")
            }
            try await fleet.setAlias(params.alias.isEmpty ? nil : params.alias, for: address)
            guard let board = await fleet.snapshots(FleetCore.Selection([.address(address)])).first else {
                throw RPCError(.boardNotFound, "\(address) was forgotten meanwhile.")
            }
            return BoardInfo(board)
        }
        dispatcher.register(FleetMethods.GattRead.self) { params, _ in
            let (selection, wire) = try gattSelection(params.select, params.address)
            let (service, characteristic) = try uuids(params.service, params.characteristic)
            let result = await fleet.readCharacteristic(selection, service: service, characteristic: characteristic)
            try requireMatch(result.outcomes.isEmpty, result.unmatched, wire)
            return gattOutcomes(result, value: HexBytes.encode)
        }
        dispatcher.register(FleetMethods.GattWrite.self) { params, _ in
            let (selection, wire) = try gattSelection(params.select, params.address)
            let (service, characteristic) = try uuids(params.service, params.characteristic)
            guard let value = HexBytes.decode(params.value) else {
                throw RPCError(.invalidParams, "value: \"\(params.value)\" is not hex bytes like \"01\" or \"0a ff\".")
            }
            let result = await fleet.writeCharacteristic(
                selection, service: service, characteristic: characteristic, value: value,
                withResponse: params.withResponse ?? true)
            try requireMatch(result.outcomes.isEmpty, result.unmatched, wire)
            return gattOutcomes(result)
        }
        dispatcher.register(FleetMethods.GattNotify.self) { params, context in
            let (selection, wire) = try gattSelection(params.select, params.address)
            let (service, characteristic) = try uuids(params.service, params.characteristic)
            let result = await fleet.notifications(selection, service: service, characteristic: characteristic)
            try requireMatch(result.outcomes.isEmpty, result.unmatched, wire)
            let connection = context.connection
            for outcome in result.outcomes {
                guard let values = outcome.value else { continue }
                let (address, name) = (outcome.address, outcome.name ?? "")
                let forwarding = Task {
                    await follow(
                        values, of: address, service: service, characteristic: characteristic, fleet: fleet
                    ) { value in
                        connection.notify(
                            method: GattValueNotification.method,
                            params: GattValueNotification(
                                address: address.rawValue, name: name, service: service.uuidString,
                                characteristic: characteristic.uuidString, value: HexBytes.encode(value),
                                time: Date().formatted(.iso8601)))
                    }
                }
                connection.onClose { forwarding.cancel() }
            }
            return gattOutcomes(result)
        }
        dispatcher.register(FleetMethods.EventsSubscribe.self) { params, context in
            EventsSubscriptionResult(topics: events.subscribe(context.connection, to: Set(params.topics ?? EventTopic.allCases)))
        }
        dispatcher.register(FleetMethods.EventsUnsubscribe.self) { params, context in
            EventsSubscriptionResult(topics: events.unsubscribe(context.connection, from: params.topics.map(Set.init)))
        }
        dispatcher.register(FleetMethods.DaemonStatus.self) { _, _ in
            let status = fleet.status
            return FleetRPC.DaemonStatus(
                version: environment.version,
                uptimeSeconds: Double(Wire.milliseconds(environment.startedAt.duration(to: .now))) / 1000,
                bluez: status.bluezAvailable,
                adapter: status.adapters.first(where: \.present).map { "\($0.name) (\($0.address ?? "?"))" },
                powered: status.adapterPowered, discovering: status.discovering,
                adapters: status.adapters.map {
                    DaemonStatus.Adapter(
                        name: $0.name, address: $0.address, present: $0.present, powered: $0.powered,
                        discovering: $0.discovering, slotsUsed: $0.links, slotsLimit: $0.limit,
                        boards: $0.boards.map(\.description))
                },
                boards: .init(known: status.boardCount, connected: status.connectedCount, ready: status.readyCount),
                clients: environment.clientCount(), mqtt: environment.mqttStatus())
        }
        dispatcher.registerDiscovery(FleetMethods.Discover.self, title: "blefleet", version: environment.version)
    }

    /// Forwards a board's values with `send` until cancelled or `send` refuses; when the link
    /// drops (the stream ends), subscribes again each time the board is ready again, so a
    /// `gatt.notify` subscription survives reconnects as the daemon's own temperature one does.
    static func follow(
        _ first: NotificationStream, of address: FleetCore.BoardAddress, service: GattUUID,
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
                FleetCore.Selection([.address(address)]), service: service, characteristic: characteristic,
                timeout: .seconds(10))
            current = again.outcomes.first?.value
        }
    }

    // MARK: Conversions

    /// A gatt.* fleet result on the wire; `value` gives an entry's hex value (reads only).
    static func gattOutcomes<Value>(
        _ result: FleetCore.FleetResult<Value>, value: (Value) -> String? = { _ in nil }
    ) -> FleetRPC.FleetResult<GattOutcome> {
        FleetRPC.FleetResult(results: result.outcomes.map { outcome in
            GattOutcome(
                address: outcome.address.rawValue, name: outcome.name ?? "", ok: outcome.succeeded,
                value: outcome.value.flatMap(value), error: outcome.error.map(BoardError.init),
                latencyMs: Wire.milliseconds(outcome.latency))
        }).unmatched(result.unmatched)
    }

    static func coreSelection(_ selection: FleetRPC.Selection) throws -> FleetCore.Selection {
        switch selection {
        case .all:
            return .all
        case .patterns(let patterns):
            do {
                return try FleetCore.Selection(parsing: patterns)
            } catch {
                throw RPCError(.invalidParams, "select: \(error.message)")
            }
        }
    }

    static func gattSelection(_ select: FleetRPC.Selection?, _ address: String?) throws
        -> (FleetCore.Selection, FleetRPC.Selection)
    {
        if let select { return (try coreSelection(select), select) }
        let wire = FleetRPC.Selection(address ?? "")
        return (try coreSelection(wire), wire)
    }

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

    /// A call whose selection matched no board at all fails as a whole (-32001).
    static func requireMatch(
        _ noBoards: Bool, _ unmatched: [FleetCore.Selection.Selector], _ selection: FleetRPC.Selection
    ) throws {
        guard noBoards else { return }
        let named = unmatched.isEmpty ? "\(selection)" : unmatched.map { "\"\($0)\"" }.joined(separator: ", ")
        throw RPCError(.boardNotFound, "No board matches \(named); `blectl boards` lists the known boards.")
    }

    /// `pending` tells which failures leave the change to be applied when the board is back.
    static func outcomes(
        _ result: FleetCore.FleetResult<Void>, selection: FleetRPC.Selection,
        pending: (FleetError) -> Bool = { _ in false }
    ) throws -> FleetRPC.FleetResult<FleetRPC.BoardOutcome> {
        try requireMatch(result.outcomes.isEmpty, result.unmatched, selection)
        return FleetRPC.FleetResult(result, pending: pending)
    }
}

extension FleetRPC.FleetResult {
    func unmatched(_ selectors: [FleetCore.Selection.Selector]) -> Self {
        var copy = self
        copy.unmatched = selectors.isEmpty ? nil : selectors.map(\.description)
        return copy
    }
}
