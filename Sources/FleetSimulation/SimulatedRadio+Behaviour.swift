import BlueZ
import DBus

/// What the simulated bluetoothd does: each step changes the world and tells the mirror, in
/// one turn of the mirror's actor.
extension SimulatedRadio {
    /// A call that reaches a hung controller is never answered (its caller times out).
    static let forever: Duration = .seconds(86_400)

    /// A call that reached the hung controller hci`index`: unanswered until the controller is
    /// powered off (which resets it), then failed, as bluetoothd fails the requests pending on
    /// an adapter that powers off; unanswered for ever if that never happens.
    func waitWhileHung(_ index: Int) async throws {
        while world.withLock({ $0.adapters.indices.contains(index) && $0.adapters[index].hung }) {
            try await clock.sleep(for: .milliseconds(100))
        }
        throw DBusError(name: "org.bluez.Error.Failed", message: "Adapter powered off while the request was pending")
    }

    // MARK: Objects

    static func adapterProperties(_ adapter: Adapter) -> [String: DBusValue] {
        [
            "Address": .string(String(format: "00:AA:00:00:00:%02X", adapter.index)),
            "Powered": .boolean(adapter.powered), "Discovering": .boolean(adapter.discovering),
            "Roles": .array(elementSignature: "s", [.string("central"), .string("peripheral")]),
        ]
    }

    static func deviceProperties(_ board: Board, on index: Int) -> [String: DBusValue] {
        [
            "Address": .string(board.address), "AddressType": .string("public"), "Name": .string(board.name),
            "Alias": .string(board.name), "Adapter": .objectPath("/org/bluez/hci\(index)"),
            "RSSI": .int16(board.rssi[index] ?? -60), "UUIDs": .array(elementSignature: "s", [.string(led.service.uuidString)]),
            "Connected": .boolean(false), "ServicesResolved": .boolean(false), "Paired": .boolean(false),
        ]
    }

    /// The GATT objects of a resolved board (as bluetoothd numbers them: by handle).
    static func gattObjects(_ board: Board, device: String) -> [(String, String, [String: DBusValue])] {
        let ledService = "\(device)/service000a", sensorService = "\(device)/service000d"
        return [
            (ledService, BlueZInterfaces.gattService, ["UUID": .string(led.service.uuidString), "Device": .objectPath(device), "Primary": .boolean(true)]),
            ("\(ledService)/char000b", BlueZInterfaces.gattCharacteristic, [
                "UUID": .string(led.uuid.uuidString), "Service": .objectPath(ledService),
                "Flags": .array(elementSignature: "s", [.string("write")]), "Notifying": .boolean(false),
            ]),
            (sensorService, BlueZInterfaces.gattService, ["UUID": .string(temperature.service.uuidString), "Device": .objectPath(device), "Primary": .boolean(true)]),
            ("\(sensorService)/char000e", BlueZInterfaces.gattCharacteristic, [
                "UUID": .string(temperature.uuid.uuidString), "Service": .objectPath(sensorService),
                "Flags": .array(elementSignature: "s", [.string("read"), .string("notify")]), "Notifying": .boolean(false),
                "Value": .bytes([UInt8(bitPattern: board.temperature)]),
            ]),
        ]
    }

    /// bluetoothd (re)appears with its adapters and no device (`generation`: the start that
    /// brings it back; a later restart meanwhile has its own).
    func appear(generation start: Int? = nil, mirror: isolated BlueZObjectMirror) {
        let loaded = world.withLock { world -> ([String: [String: BlueZObjectTree.Properties]], Int)? in
            guard start == nil || start == world.generation else { return nil }
            var objects: [String: [String: BlueZObjectTree.Properties]] = [:]
            for adapter in world.adapters where adapter.plugged {
                objects[adapter.path] = [BlueZInterfaces.adapter: Self.adapterProperties(adapter)]
            }
            world.present = true
            world.known = [:]
            return (objects, world.generation)
        }
        guard let (objects, generation) = loaded else { return }
        mirror.load(objects, owner: ":1.\(generation)")
    }

    // MARK: Adapters

    /// A command to an adapter: unknown when unplugged, never answered while hung.
    func adapterCommand(
        _ path: String, generation: Int, mirror: BlueZObjectMirror, _ body: (Int) async throws -> Void
    ) async throws {
        guard let index = Self.adapter(path) else { throw Self.unknown(path) }
        let hung = try world.withLock { world -> Bool in
            guard world.present, world.generation == generation else { throw Self.gone }
            guard world.adapters.indices.contains(index), world.adapters[index].plugged else { throw Self.unknown(path) }
            return world.adapters[index].hung
        }
        if hung { try await waitWhileHung(index) }
        try await clock.sleep(for: .milliseconds(5))
        try await body(index)
    }

    func setDiscovering(_ on: Bool, adapter index: Int, mirror: isolated BlueZObjectMirror) throws {
        let path = try world.withLock { world -> String? in
            guard world.adapters[index].plugged else { throw Self.unknown("/org/bluez/hci\(index)") }
            guard world.adapters[index].powered else {
                throw DBusError(name: "org.bluez.Error.NotReady", message: "Resource Not Ready")
            }
            guard world.adapters[index].discovering != on else { return nil }
            world.adapters[index].discovering = on
            return world.adapters[index].path
        }
        if let path { mirror.apply(.propertiesChanged(path: path, interface: BlueZInterfaces.adapter, changed: ["Discovering": .boolean(on)], invalidated: [])) }
    }

    func setPowered(_ on: Bool, adapter index: Int, generation: Int, mirror: BlueZObjectMirror) async throws {
        let hung = try world.withLock { world -> Bool in
            guard world.present, world.generation == generation else { throw Self.gone }
            guard world.adapters.indices.contains(index), world.adapters[index].plugged else { throw Self.unknown("/org/bluez/hci\(index)") }
            return world.adapters[index].hung
        }
        // Powering a hung controller off resets it (the kernel closes it); on, it still hangs.
        if hung && on { try await clock.sleep(for: Self.forever) }
        try await clock.sleep(for: .milliseconds(50))
        await power(on, adapter: index, mirror: mirror)
    }

    func power(_ on: Bool, adapter index: Int, mirror: isolated BlueZObjectMirror) {
        var staleGone: [String] = []
        let (path, dropped) = world.withLock { world -> (String, [String]) in
            world.adapters[index].powered = on
            var dropped: [String] = []
            if !on {
                world.adapters[index].hung = false
                world.adapters[index].discovering = false
                dropped = world.links.filter { $0.value == index }.map(\.key).sorted()
                staleGone = world.stale.filter { $0.value == index }.map(\.key).sorted()
                world.stale = world.stale.filter { $0.value != index }
                world.pending = world.pending.filter { $0.value != index }
            }
            return (world.adapters[index].path, dropped)
        }
        for address in dropped { dropLink(address, mirror: mirror) }
        for address in staleGone { hostLearnsLinkGone(address, on: index, mirror: mirror) }
        var changed: [String: DBusValue] = ["Powered": .boolean(on)]
        if !on { changed["Discovering"] = .boolean(false) }
        mirror.apply(.propertiesChanged(path: path, interface: BlueZInterfaces.adapter, changed: changed, invalidated: []))
    }

    func remove(_ address: String, from index: Int, mirror: isolated BlueZObjectMirror) {
        let linked = world.withLock { $0.links[address] == index }
        if linked { dropLink(address, mirror: mirror) }
        let known = world.withLock { $0.known[index, default: []].remove(address) != nil }
        if known {
            mirror.apply(.interfacesRemoved(path: Self.devicePath(address, on: index), interfaces: [BlueZInterfaces.device]))
        }
    }

    // MARK: Links

    private enum Reach { case linked, unreachable, refused, aborted }

    func connect(_ address: String, through index: Int, generation: Int, mirror: BlueZObjectMirror) async throws {
        let (hung, delay, already) = try world.withLock { world -> (Bool, Duration, Bool) in
            guard world.present, world.generation == generation else { throw Self.gone }
            guard world.adapters.indices.contains(index), world.adapters[index].plugged,
                world.known[index, default: []].contains(address)
            else { throw Self.unknown(Self.devicePath(address, on: index)) }
            let adapter = world.adapters[index]
            guard adapter.powered else { throw DBusError(name: "org.bluez.Error.NotReady", message: "Resource Not Ready") }
            if world.links[address] == index { return (false, .zero, true) }
            if world.pending[address] == index {
                throw DBusError(name: "org.bluez.Error.InProgress", message: "Operation already in progress")
            }
            world.connectCalls += 1
            world.connectsOf[address, default: 0] += 1
            let busy = world.links.values.count { $0 == index } + world.pending.values.count { $0 == index }
            if busy >= adapter.limit {
                world.violations.append(
                    "at \(time) a Connect of \(address) through hci\(index) with \(busy) links and connects under way there (limit \(adapter.limit))")
            }
            world.pending[address] = index
            let delay = world.random.duration(.milliseconds(40)...(.milliseconds(400))) + adapter.slowBy
            return (adapter.hung, delay, false)
        }
        if already { return }
        if hung { try await waitWhileHung(index) }
        try await clock.sleep(for: delay)
        let reach = try await linkUp(address, through: index, generation: generation, mirror: mirror)
        switch reach {
        case .linked:
            break
        case .refused:
            throw Self.failed("Software caused connection abort")
        case .aborted:
            throw Self.failed("le-connection-abort-by-local")
        case .unreachable:
            // The controller pages for it until bluetoothd gives up.
            try await clock.sleep(for: .seconds(4))
            world.withLock { world in
                if world.pending[address] == index { world.pending[address] = nil }
            }
            throw Self.failed("le-connection-abort-by-local")
        }
        let resolve = world.withLock { $0.random.duration(.milliseconds(80)...(.milliseconds(600))) }
        try await clock.sleep(for: resolve)
        await resolved(address, through: index, mirror: mirror)
    }

    private func linkUp(_ address: String, through index: Int, generation: Int, mirror: isolated BlueZObjectMirror) throws -> Reach {
        let reach = try world.withLock { world -> Reach in
            guard world.present, world.generation == generation else { throw Self.gone }
            guard world.pending[address] == index else { return .aborted }  // cancelled, or the adapter went down
            let adapter = world.adapters[index]
            guard adapter.plugged, adapter.powered, !adapter.hung, let board = world.boards[address] else {
                world.pending[address] = nil
                return .aborted
            }
            // A board with a link does not advertise: a second central pages it in vain.
            guard board.powered, board.inRange.contains(index), world.links[address] == nil else { return .unreachable }
            world.pending[address] = nil
            if board.refuses { return .refused }
            let links = world.links.values.count { $0 == index }
            if links >= adapter.limit {
                world.violations.append("at \(time) a link of \(address) through hci\(index) past its limit of \(adapter.limit)")
                return .aborted
            }
            world.links[address] = index
            world.mostLinks[index] = max(world.mostLinks[index] ?? 0, links + 1)
            return .linked
        }
        if reach == .linked {
            mirror.apply(.propertiesChanged(
                path: Self.devicePath(address, on: index), interface: BlueZInterfaces.device,
                changed: ["Connected": .boolean(true)], invalidated: []))
        }
        return reach
    }

    private func resolved(_ address: String, through index: Int, mirror: isolated BlueZObjectMirror) {
        guard let board = world.withLock({ $0.links[address] == index ? $0.boards[address] : nil }) else { return }
        let device = Self.devicePath(address, on: index)
        for (path, interface, properties) in Self.gattObjects(board, device: device) {
            mirror.apply(.interfacesAdded(path: path, interfaces: [interface: properties]))
        }
        mirror.apply(.propertiesChanged(path: device, interface: BlueZInterfaces.device, changed: ["ServicesResolved": .boolean(true)], invalidated: []))
    }

    func disconnect(_ address: String, through index: Int, generation: Int, mirror: BlueZObjectMirror) async throws {
        let (hung, linked) = try world.withLock { world -> (Bool, Bool) in
            guard world.present, world.generation == generation else { throw Self.gone }
            guard world.adapters.indices.contains(index), world.adapters[index].plugged else {
                throw Self.unknown(Self.devicePath(address, on: index))
            }
            if world.pending[address] == index {
                world.pending[address] = nil  // Device1.Disconnect cancels a connect under way
                return (world.adapters[index].hung, false)
            }
            if world.stale[address] == index { return (true, false) }  // through a hung controller: unanswered
            guard world.links[address] == index else {
                throw DBusError(name: "org.bluez.Error.NotConnected", message: "Not Connected")
            }
            return (world.adapters[index].hung, true)
        }
        if hung { try await waitWhileHung(index) }
        guard linked else { return }
        // bluetoothd holds the link for its disconnect timer (up to 2 s) before it goes.
        let hold = world.withLock { $0.random.duration(.milliseconds(100)...(.milliseconds(2000))) }
        try await clock.sleep(for: hold)
        await dropLink(address, ifThrough: index, mirror: mirror)
    }

    /// bluetoothd learns that a link the board ended long ago (``World/stale``) is gone: the
    /// controller was reset.
    private func hostLearnsLinkGone(_ address: String, on index: Int, mirror: isolated BlueZObjectMirror) {
        guard let board = world.withLock({ $0.boards[address] }) else { return }
        let device = Self.devicePath(address, on: index)
        world.withLock { world in world.notifying = world.notifying.filter { !$0.hasPrefix(device) } }
        mirror.apply(.propertiesChanged(
            path: device, interface: BlueZInterfaces.device,
            changed: ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], invalidated: []))
        for (path, interface, _) in Self.gattObjects(board, device: device).reversed() {
            mirror.apply(.interfacesRemoved(path: path, interfaces: [interface]))
        }
    }

    func dropLink(_ address: String, ifThrough index: Int? = nil, mirror: isolated BlueZObjectMirror) {
        guard let (through, board) = world.withLock({ world -> (Int, Board)? in
            guard let through = world.links[address], index == nil || through == index, let board = world.boards[address] else { return nil }
            world.links[address] = nil
            let device = Self.devicePath(address, on: through)
            world.notifying = world.notifying.filter { !$0.hasPrefix(device) }
            return (through, board)
        }) else { return }
        let device = Self.devicePath(address, on: through)
        mirror.apply(.propertiesChanged(
            path: device, interface: BlueZInterfaces.device,
            changed: ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], invalidated: []))
        for (path, interface, _) in Self.gattObjects(board, device: device).reversed() {
            mirror.apply(.interfacesRemoved(path: path, interfaces: [interface]))
        }
    }

    // MARK: GATT

    func gatt(_ member: String, _ path: String, _ arguments: [DBusValue], generation: Int, mirror: BlueZObjectMirror) async throws -> [DBusValue] {
        guard let (index, address) = Self.device(path) else { throw Self.unknown(path) }
        let hung = try world.withLock { world -> Bool in
            guard world.present, world.generation == generation else { throw Self.gone }
            if world.stale[address] == index { return true }  // through a hung controller: unanswered
            guard world.links[address] == index else { throw Self.unknown(path) }
            return world.adapters[index].hung
        }
        if hung { try await waitWhileHung(index) }
        let delay = world.withLock { $0.random.duration(.milliseconds(15)...(.milliseconds(90))) }
        try await clock.sleep(for: delay)
        return try await gattAnswer(member, path, address: address, index: index, arguments: arguments, mirror: mirror)
    }

    private func gattAnswer(
        _ member: String, _ path: String, address: String, index: Int, arguments: [DBusValue],
        mirror: isolated BlueZObjectMirror
    ) throws -> [DBusValue] {
        try world.withLock { world -> Void in
            guard world.links[address] == index else { throw Self.failed("Not connected") }
        }
        // The characteristic called, known by its UUID (as the fleet finds it), not its path.
        let uuid = mirror.tree.properties(path, BlueZInterfaces.gattCharacteristic)?["UUID"]?.string
        let isLED = uuid == Self.led.uuid.uuidString
        switch member {
        case "ReadValue":
            guard !isLED else { throw DBusError(name: "org.bluez.Error.NotPermitted", message: "Read not permitted") }
            let value = world.withLock { UInt8(bitPattern: $0.boards[address]?.temperature ?? 0) }
            return [.bytes([value])]
        case "WriteValue":
            guard isLED, let bytes = arguments.first?.bytes, !bytes.isEmpty else {
                throw DBusError(name: "org.bluez.Error.NotPermitted", message: "Write not permitted")
            }
            world.withLock { $0.boards[address]?.led = bytes[0] != 0 }
            return []
        case "StartNotify", "StopNotify":
            guard !isLED else { throw DBusError(name: "org.bluez.Error.NotSupported", message: "Operation is not supported") }
            let on = member == "StartNotify"
            let changed = world.withLock { on ? $0.notifying.insert(path).inserted : $0.notifying.remove(path) != nil }
            if changed {
                mirror.apply(.propertiesChanged(path: path, interface: BlueZInterfaces.gattCharacteristic, changed: ["Notifying": .boolean(on)], invalidated: []))
            }
            return []
        default:
            throw DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(member) is not simulated")
        }
    }

    // MARK: The air

    /// A scan under way on `index` hears the boards in its range at once (they advertise
    /// every 100 ms), not at the next second of the air.
    func hearNewBoards(adapter index: Int, mirror: isolated BlueZObjectMirror) {
        var events: [BlueZMirrorEvent] = []
        world.withLock { world in
            let adapter = world.adapters[index]
            guard world.present, adapter.plugged, adapter.powered, adapter.discovering, !adapter.hung else { return }
            Self.hear(on: adapter, in: &world, into: &events, scanStart: true)
        }
        for event in events { mirror.apply(event) }
    }

    /// The boards `adapter` hears advertise: a new one is added, a known one's signal changes
    /// (most of the time; at a scan's start always, as bluetoothd invalidates every RSSI when
    /// a discovery stops and reports each board's again with the first advertisement heard).
    private static func hear(
        on adapter: Adapter, in world: inout World, into events: inout [BlueZMirrorEvent], scanStart: Bool = false
    ) {
        for address in world.boards.keys.sorted() {
            guard var board = world.boards[address], board.powered, board.inRange.contains(adapter.index),
                world.links[address] == nil
            else { continue }
            let path = Self.devicePath(address, on: adapter.index)
            if world.known[adapter.index, default: []].insert(address).inserted {
                events.append(.interfacesAdded(path: path, interfaces: [BlueZInterfaces.device: Self.deviceProperties(board, on: adapter.index)]))
            } else if scanStart || world.random.chance(0.6) {
                let rssi = (board.rssi[adapter.index] ?? -60) + Int16.random(in: -3...3, using: &world.random)
                board.rssi[adapter.index] = min(-30, max(-95, rssi))
                world.boards[address] = board
                events.append(.propertiesChanged(path: path, interface: BlueZInterfaces.device, changed: ["RSSI": .int16(board.rssi[adapter.index]!)], invalidated: []))
            }
        }
    }

    /// One second of the room: boards that are not linked advertise to every discovering
    /// adapter that hears them; linked ones notify their temperature now and then.
    func tick(_ second: Int, mirror: isolated BlueZObjectMirror) {
        var events: [BlueZMirrorEvent] = []
        world.withLock { world in
            guard world.present else { return }
            for adapter in world.adapters where adapter.plugged && adapter.powered && adapter.discovering && !adapter.hung {
                Self.hear(on: adapter, in: &world, into: &events)
            }
            guard second % 5 == 0 else { return }
            for path in world.notifying.sorted() {
                guard let (index, address) = Self.device(path), !world.adapters[index].hung, var board = world.boards[address] else { continue }
                board.temperature = min(40, max(10, board.temperature + Int8.random(in: -1...1, using: &world.random)))
                world.boards[address] = board
                events.append(.propertiesChanged(path: path, interface: BlueZInterfaces.gattCharacteristic, changed: ["Value": .bytes([UInt8(bitPattern: board.temperature)])], invalidated: []))
            }
        }
        for event in events { mirror.apply(event) }
    }
}
