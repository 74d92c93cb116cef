public import DBus
public import Logging

/// An exact mirror of `org.bluez`'s objects and properties.
///
/// It subscribes to every signal from `org.bluez` (InterfacesAdded/Removed and
/// PropertiesChanged in one ordered stream) *before* calling `GetManagedObjects`, replays
/// signals that arrived while the snapshot was loading, and starts again from scratch when
/// `org.bluez` disappears and returns (a bluetoothd restart). `run(on:)` keeps it exact until
/// cancelled.
///
/// A simulated radio feeds it directly instead (``load(_:owner:)``, ``apply(_:)``,
/// ``lose()``): what bluetoothd's signals would say, in the same order.
public actor BlueZObjectMirror {
    public private(set) var tree = BlueZObjectTree()
    /// The unique bus name of the `org.bluez` owner whose objects are mirrored, if any.
    public private(set) var owner: String?
    /// Whether a snapshot is loaded (false while BlueZ is absent or loading).
    public private(set) var isLoaded = false
    /// When each device object (by path) was last heard advertising, by ``clock``, and what
    /// it said then: it appeared with an RSSI, or BlueZ changed what it says of an
    /// advertisement (RSSI, data, TX power). What BlueZ remembers of a device it has not
    /// heard since the mirror loaded has no entry: a scan session reports what it heard, not
    /// what BlueZ remembers.
    public private(set) var hearings: [String: Hearing] = [:]

    /// One device's last hearing.
    public struct Hearing: Sendable, Equatable {
        /// Nil for what a device said before the mirror loaded (BlueZ had its RSSI from a
        /// discovery under way then): not a hearing of the mirror's, but what it said.
        public var at: ContinuousClock.Instant?
        /// Its Device1 properties as BlueZ showed them when it was last heard without a link
        /// (RSSI, name, advertised services and data): what a scanner was told of it. A link
        /// made since changes what BlueZ shows (no RSSI, the services it resolved), not this.
        public var advertised: BlueZObjectTree.Properties
        /// Whether BlueZ has resolved the device's services since: its `UUIDs` hold them from
        /// then on, and the advertised ones are those kept from before.
        public var resolvedOnce = false
    }

    /// When each device was last heard (``hearings`` without what it said).
    public var heardAt: [String: ContinuousClock.Instant] { hearings.compactMapValues(\.at) }

    /// Every device object with its Device1 properties, and ``hearings``, in one look.
    public func devicesAndHearings() -> (
        devices: [(path: String, properties: BlueZObjectTree.Properties)], hearings: [String: Hearing]
    ) {
        (tree.objects(implementing: BlueZInterfaces.device), hearings)
    }

    /// Keeps what BlueZ shows of each device without a link when the mirror loads (its name
    /// and services as last advertised, its RSSI when a discovery under way heard it), not as
    /// a hearing of the mirror's: a device the fleet links before it is heard again (it
    /// connects a board BlueZ knows at once) is reported as it advertised, not with the
    /// services the link resolved.
    private func noteWhatDevicesSaid() {
        for (path, properties) in tree.objects(implementing: BlueZInterfaces.device) where hearings[path] == nil {
            let linked = properties["Connected"]?.bool == true || properties["ServicesResolved"]?.bool == true
            if !linked { hearings[path] = Hearing(at: nil, advertised: properties) }
        }
    }

    /// Notes that the device at `path` was heard now: what it said is kept while it has no
    /// link (a device linked when heard keeps what it said before). Its `UUIDs` are the
    /// first ones kept: BlueZ adds to them the services it resolved over a link (and keeps
    /// them after), which the device does not advertise.
    private func heard(_ path: String) {
        let properties = tree.objects[path]?[BlueZInterfaces.device] ?? [:]
        let linked = properties["Connected"]?.bool == true || properties["ServicesResolved"]?.bool == true
        let before = hearings[path]
        var advertised = linked ? before?.advertised ?? properties : properties
        if let before, before.resolvedOnce { advertised["UUIDs"] = before.advertised["UUIDs"] }
        hearings[path] = Hearing(at: clock.now, advertised: advertised, resolvedOnce: before?.resolvedOnce ?? false)
    }

    /// A change of a device that is not a hearing: its `UUIDs` are what it advertises until
    /// BlueZ resolves its services (BlueZ tells them apart from its first report), and kept
    /// from then on.
    private func deviceChanged(_ path: String, _ changed: BlueZObjectTree.Properties) {
        guard hearings[path] != nil else { return }
        if changed["ServicesResolved"]?.bool == true { hearings[path]?.resolvedOnce = true }
        if let uuids = changed["UUIDs"], hearings[path]?.resolvedOnce == false {
            hearings[path]?.advertised["UUIDs"] = uuids
        }
    }

    let logger: Logger
    let clock: any RadioClock
    private var loadingOwner: String?
    private var bufferedSignals: [DBusSignal] = []
    private struct Subscriber {
        /// The objects whose events it wants (nil: all).
        var paths: Set<String>?
        var interfaces: Set<String>?
        /// Where its events go: a stream (a hand-off to its consumer per event), or a
        /// handler run right here on the mirror, in order.
        var deliver: @Sendable (BlueZMirrorEvent) -> Void

        func wants(_ event: BlueZMirrorEvent) -> Bool {
            switch event {
            case .serviceLost, .serviceLoaded:
                return true
            case .interfacesAdded(let eventPath, let added):
                return (paths?.contains(eventPath) ?? true)
                    && (interfaces.map { wanted in added.keys.contains(where: wanted.contains) } ?? true)
            case .interfacesRemoved(let eventPath, let removed):
                return (paths?.contains(eventPath) ?? true)
                    && (interfaces.map { wanted in removed.contains(where: wanted.contains) } ?? true)
            case .propertiesChanged(let eventPath, let interface, _, _):
                return (paths?.contains(eventPath) ?? true) && (interfaces?.contains(interface) ?? true)
            }
        }
    }

    private var subscribers: [UInt64: Subscriber] = [:]
    var waiters: [UInt64: any MirrorWaiter] = [:]
    var nextID: UInt64 = 0

    public init(logger: Logger, clock: any RadioClock = MachineClock()) {
        self.logger = logger
        self.clock = clock
    }

    /// Keeps the mirror exact with `org.bluez` on `connection` until cancelled or the bus
    /// connection is lost (then throws).
    public func run(on connection: DBusConnection) async throws {
        let signals = try await connection.signals(matching: DBusMatchRule(sender: BlueZInterfaces.service))
        let owners = try await connection.nameOwnerChanges(of: BlueZInterfaces.service)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await self.consume(signals)
                throw BlueZError.busDisconnected("the signal stream from the bus ended")
            }
            group.addTask {
                for try await change in owners { await self.ownerChanged(to: change.newOwner, on: connection) }
                throw BlueZError.busDisconnected("the name-owner stream from the bus ended")
            }
            // Subscribed: now look at who owns org.bluez and load its objects.
            await ownerChanged(to: try await connection.nameOwner(of: BlueZInterfaces.service), on: connection)
            try await group.next()
            group.cancelAll()
        }
    }

    /// Applies the bus's signals on this actor as they arrive (one hand-off per signal).
    private func consume(_ signals: DBusSignalStream) async throws {
        for try await signal in signals { handle(signal) }
    }

    /// Events from now on, in BlueZ's order, until the consumer stops iterating. With `path`,
    /// only that object's events; with `interfaces`, only events about those interfaces
    /// (`serviceLost`/`serviceLoaded` always come). A characteristic's notification stream
    /// is not woken by every other board's values, nor the fleet by any of them.
    public func events(path: String? = nil, interfaces: Set<String>? = nil) -> AsyncStream<BlueZMirrorEvent> {
        events(paths: path.map { [$0] }, interfaces: interfaces)
    }

    /// As ``events(path:interfaces:)``, for the events of several objects.
    public func events(paths: Set<String>?, interfaces: Set<String>? = nil) -> AsyncStream<BlueZMirrorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: BlueZMirrorEvent.self)
        let id = takeID()
        subscribers[id] = Subscriber(paths: paths, interfaces: interfaces) { continuation.yield($0) }
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    /// Runs `handler` on this actor for each event from now on (filtered as by ``events(path:interfaces:)``),
    /// in BlueZ's order, until ``stopObserving(_:)``. For steady traffic that needs no
    /// actor of its own (a notified value, an RSSI update): no hand-off per event. The
    /// handler must be quick and must not block.
    public func observe(
        path: String? = nil, interfaces: Set<String>? = nil,
        _ handler: @escaping @Sendable (BlueZMirrorEvent) -> Void
    ) -> BlueZMirrorObservation {
        observe(paths: path.map { [$0] }, interfaces: interfaces, handler)
    }

    /// As ``observe(path:interfaces:_:)``, for the events of several objects.
    public func observe(
        paths: Set<String>?, interfaces: Set<String>? = nil,
        _ handler: @escaping @Sendable (BlueZMirrorEvent) -> Void
    ) -> BlueZMirrorObservation {
        let id = takeID()
        subscribers[id] = Subscriber(paths: paths, interfaces: interfaces, deliver: handler)
        return BlueZMirrorObservation(id: id, mirror: self)
    }

    /// Ends an observation (idempotent); its handler is not called after this returns.
    public func stopObserving(_ observation: BlueZMirrorObservation) {
        unsubscribe(observation.id)
    }

    /// Waits until a snapshot is loaded (BlueZ present), or throws `.timeout`.
    public func waitUntilLoaded(timeout: Duration) async throws {
        try await wait(timeout: timeout, description: "org.bluez did not appear on the bus") {
            $0.isLoaded ? .done(()) : .pending
        }
    }

    func takeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    private func unsubscribe(_ id: UInt64) {
        subscribers[id] = nil
    }

    private func broadcast(_ event: BlueZMirrorEvent) {
        for subscriber in subscribers.values where subscriber.wants(event) {
            subscriber.deliver(event)
        }
        evaluateWaiters(after: event)
    }

    // MARK: Owner tracking and loading

    private func ownerChanged(to newOwner: String?, on connection: DBusConnection) async {
        guard newOwner != owner else { return }
        if owner != nil { lose() }
        guard let newOwner else { return }
        owner = newOwner
        await load(from: newOwner, on: connection)
    }

    /// `org.bluez` left the bus: the tree is cleared and everyone told.
    public func lose() {
        guard owner != nil || isLoaded else { return }
        logger.warning("org.bluez left the bus; mirror cleared", metadata: ["dbus.owner": "\(owner ?? "")"])
        owner = nil
        loadingOwner = nil
        isLoaded = false
        tree = BlueZObjectTree()
        hearings = [:]
        broadcast(.serviceLost)
    }

    /// `org.bluez` (as `owner`) is here with these objects (as `GetManagedObjects` gives them).
    public func load(_ objects: [String: [String: BlueZObjectTree.Properties]], owner newOwner: String) {
        owner = newOwner
        loadingOwner = nil
        tree = BlueZObjectTree(objects: objects)
        isLoaded = true
        noteWhatDevicesSaid()
        broadcast(.serviceLoaded)
    }

    private func load(from loadOwner: String, on connection: DBusConnection) async {
        loadingOwner = loadOwner
        bufferedSignals = []
        var attempt = 0
        while owner == loadOwner {
            attempt += 1
            do {
                let reply = try await connection.call(
                    destination: BlueZInterfaces.service, path: "/",
                    interface: BlueZInterfaces.objectManager, member: "GetManagedObjects",
                    timeout: .seconds(10))
                // Re-check after the await: BlueZ may have left (or restarted) meanwhile.
                guard owner == loadOwner else { return }
                tree = BlueZObjectTree(objects: Self.parseManagedObjects(reply.first))
                noteWhatDevicesSaid()
                let replay = bufferedSignals
                bufferedSignals = []
                loadingOwner = nil
                isLoaded = true
                logger.info(
                    "BlueZ objects loaded",
                    metadata: ["dbus.owner": "\(loadOwner)", "bluez.objects": "\(tree.objects.count)"])
                broadcast(.serviceLoaded)
                for signal in replay { apply(signal) }
                return
            } catch {
                if Task.isCancelled { return }
                let bluezError = BlueZError(error)
                if case .busDisconnected = bluezError { return }
                logger.warning(
                    "GetManagedObjects failed; retrying",
                    metadata: ["error": "\(bluezError)", "attempt": "\(attempt)"])
                // Bounded backoff: 50 ms, 100 ms, … up to 2 s.
                let delay = min(2000, 50 << min(attempt, 6))
                try? await clock.sleep(for: .milliseconds(delay))
                if Task.isCancelled { return }
            }
        }
    }

    static func parseManagedObjects(_ value: DBusValue?) -> [String: [String: BlueZObjectTree.Properties]] {
        var objects: [String: [String: BlueZObjectTree.Properties]] = [:]
        for (path, interfaces) in value?.dictionary ?? [:] {
            objects[path] = parseInterfaces(interfaces)
        }
        return objects
    }

    static func parseInterfaces(_ value: DBusValue) -> [String: BlueZObjectTree.Properties] {
        var result: [String: BlueZObjectTree.Properties] = [:]
        for (interface, properties) in value.dictionary ?? [:] {
            result[interface] = parseProperties(properties)
        }
        return result
    }

    static func parseProperties(_ value: DBusValue) -> BlueZObjectTree.Properties {
        (value.dictionary ?? [:]).mapValues(\.unwrapped)
    }

    // MARK: Signals

    private func handle(_ signal: DBusSignal) {
        // Only the current owner's signals count; a late signal from a dead owner is dropped.
        guard let owner, signal.sender == owner else { return }
        if loadingOwner == owner {
            bufferedSignals.append(signal)
            return
        }
        apply(signal)
    }

    private func apply(_ signal: DBusSignal) {
        if let event = Self.event(of: signal) { apply(event) }
    }

    /// What a signal of bluetoothd's says, as an event (nil for signals the mirror ignores).
    static func event(of signal: DBusSignal) -> BlueZMirrorEvent? {
        let args = signal.arguments
        switch (signal.interface, signal.member) {
        case (BlueZInterfaces.objectManager, "InterfacesAdded"):
            guard args.count >= 2, let path = args[0].string else { return nil }
            return .interfacesAdded(path: path, interfaces: parseInterfaces(args[1]))
        case (BlueZInterfaces.objectManager, "InterfacesRemoved"):
            guard args.count >= 2, let path = args[0].string else { return nil }
            return .interfacesRemoved(path: path, interfaces: (args[1].array ?? []).compactMap(\.string))
        case (BlueZInterfaces.properties, "PropertiesChanged"):
            guard args.count >= 2, let interface = args[0].string else { return nil }
            let invalidated = (args.count > 2 ? args[2].array ?? [] : []).compactMap(\.string)
            return .propertiesChanged(
                path: signal.path, interface: interface, changed: parseProperties(args[1]), invalidated: invalidated)
        default:
            return nil
        }
    }

    /// Applies one change of bluetoothd's objects (as its signal would say it) and tells
    /// everyone who wants it. `serviceLost`/`serviceLoaded` are ``lose()`` and ``load(_:owner:)``.
    public func apply(_ event: BlueZMirrorEvent) {
        switch event {
        case .interfacesAdded(let path, let interfaces):
            var current = tree.objects[path] ?? [:]
            for (interface, properties) in interfaces {
                current[interface, default: [:]].merge(properties) { _, new in new }
            }
            tree.set(current, at: path)
            if let device = interfaces[BlueZInterfaces.device], device["RSSI"] != nil { heard(path) }
            broadcast(event)
        case .interfacesRemoved(let path, let interfaces):
            guard var current = tree.objects[path] else { return }
            for interface in interfaces { current[interface] = nil }
            if interfaces.contains(BlueZInterfaces.device) { hearings[path] = nil }
            tree.set(current, at: path)
            broadcast(event)
        case .propertiesChanged(let path, let interface, let changed, let invalidated):
            // Properties of objects we do not know (removed meanwhile) are ignored.
            guard tree.objects[path]?[interface] != nil else { return }
            tree.change(path, interface, changed, invalidated: invalidated)
            if interface == BlueZInterfaces.device {
                deviceChanged(path, changed)
                if Set(named: changed.keys).sayAdvertised { heard(path) }
            }
            broadcast(event)
        case .serviceLost, .serviceLoaded:
            return
        }
    }
}

/// One ``BlueZObjectMirror/observe(path:interfaces:_:)`` registration.
public struct BlueZMirrorObservation: Sendable {
    let id: UInt64
    let mirror: BlueZObjectMirror

    /// Ends the observation without waiting (its handler may run a few more times).
    public func cancel() {
        let mirror = self.mirror
        Task { await mirror.stopObserving(self) }
    }
}
