public import DBus
public import Logging

/// An exact mirror of `org.bluez`'s objects and properties.
///
/// It subscribes to every signal from `org.bluez` (InterfacesAdded/Removed and
/// PropertiesChanged in one ordered stream) *before* calling `GetManagedObjects`, replays
/// signals that arrived while the snapshot was loading, and starts again from scratch when
/// `org.bluez` disappears and returns (a bluetoothd restart). `run()` keeps it exact until
/// cancelled.
public actor BlueZObjectMirror {
    public private(set) var tree = BlueZObjectTree()
    /// The unique bus name of the `org.bluez` owner whose objects are mirrored, if any.
    public private(set) var owner: String?
    /// Whether a snapshot is loaded (false while BlueZ is absent or loading).
    public private(set) var isLoaded = false

    let connection: DBusConnection
    let logger: Logger
    private var loadingOwner: String?
    private var bufferedSignals: [DBusSignal] = []
    private var subscribers: [UInt64: (path: String?, continuation: AsyncStream<BlueZMirrorEvent>.Continuation)] = [:]
    var waiters: [UInt64: any MirrorWaiter] = [:]
    var nextID: UInt64 = 0

    public init(connection: DBusConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Keeps the mirror exact until cancelled or the bus connection is lost (then throws).
    public func run() async throws {
        let signals = try await connection.signals(matching: DBusMatchRule(sender: BlueZInterfaces.service))
        let owners = try await connection.nameOwnerChanges(of: BlueZInterfaces.service)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await signal in signals { await self.handle(signal) }
                throw BlueZError.busDisconnected("the signal stream from the bus ended")
            }
            group.addTask {
                for try await change in owners { await self.ownerChanged(to: change.newOwner) }
                throw BlueZError.busDisconnected("the name-owner stream from the bus ended")
            }
            // Subscribed: now look at who owns org.bluez and load its objects.
            await ownerChanged(to: try await connection.nameOwner(of: BlueZInterfaces.service))
            try await group.next()
            group.cancelAll()
        }
    }

    /// Events from now on, in BlueZ's order, until the consumer stops iterating. With `path`,
    /// only that object's events (and `serviceLost`/`serviceLoaded`): a characteristic's
    /// notification stream is not woken by every other board's values.
    public func events(path: String? = nil) -> AsyncStream<BlueZMirrorEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: BlueZMirrorEvent.self)
        let id = takeID()
        subscribers[id] = (path, continuation)
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
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
        let path: String?
        switch event {
        case .interfacesAdded(let p, _), .interfacesRemoved(let p, _), .propertiesChanged(let p, _, _, _): path = p
        case .serviceLost, .serviceLoaded: path = nil
        }
        for subscriber in subscribers.values where subscriber.path == nil || path == nil || subscriber.path == path {
            subscriber.continuation.yield(event)
        }
        evaluateWaiters()
    }

    // MARK: Owner tracking and loading

    private func ownerChanged(to newOwner: String?) async {
        guard newOwner != owner else { return }
        if owner != nil {
            logger.warning("org.bluez left the bus; mirror cleared", metadata: ["dbus.owner": "\(owner ?? "")"])
            owner = nil
            isLoaded = false
            tree = BlueZObjectTree()
            broadcast(.serviceLost)
        }
        guard let newOwner else { return }
        owner = newOwner
        await load(from: newOwner)
    }

    private func load(from loadOwner: String) async {
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
                try? await Task.sleep(for: .milliseconds(delay))
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
        let args = signal.arguments
        switch (signal.interface, signal.member) {
        case (BlueZInterfaces.objectManager, "InterfacesAdded"):
            guard args.count >= 2, let path = args[0].string else { return }
            let interfaces = Self.parseInterfaces(args[1])
            var current = tree.objects[path] ?? [:]
            for (interface, properties) in interfaces {
                current[interface, default: [:]].merge(properties) { _, new in new }
            }
            tree.objects[path] = current
            broadcast(.interfacesAdded(path: path, interfaces: interfaces))
        case (BlueZInterfaces.objectManager, "InterfacesRemoved"):
            guard args.count >= 2, let path = args[0].string else { return }
            let interfaces = (args[1].array ?? []).compactMap(\.string)
            guard var current = tree.objects[path] else { return }
            for interface in interfaces { current[interface] = nil }
            tree.objects[path] = current.isEmpty ? nil : current
            broadcast(.interfacesRemoved(path: path, interfaces: interfaces))
        case (BlueZInterfaces.properties, "PropertiesChanged"):
            guard args.count >= 2, let interface = args[0].string else { return }
            // Properties of objects we do not know (removed meanwhile) are ignored.
            guard tree.objects[signal.path]?[interface] != nil else { return }
            let changed = Self.parseProperties(args[1])
            let invalidated = (args.count > 2 ? args[2].array ?? [] : []).compactMap(\.string)
            tree.objects[signal.path]?[interface]?.merge(changed) { _, new in new }
            for name in invalidated { tree.objects[signal.path]?[interface]?[name] = nil }
            broadcast(.propertiesChanged(path: signal.path, interface: interface, changed: changed, invalidated: invalidated))
        default:
            break
        }
    }
}
