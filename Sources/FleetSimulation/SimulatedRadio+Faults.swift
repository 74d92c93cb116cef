import BlueZ
import DBus

/// What can go wrong in a classroom, and the way back.
public enum Fault: Sendable, Hashable, CustomStringConvertible {
    /// A board loses power (its link drops, it stops advertising; its LED is off when it is back).
    case boardLosesPower(String)
    case boardPowered(String)
    /// A board refuses connects (until it is powered again).
    case boardRefuses(String)
    /// A board moves out of an adapter's range, and back.
    case boardLeaves(String, adapter: Int)
    case boardReturns(String, adapter: Int)
    /// A controller stops answering, until it is powered off (the fleet's recovery).
    /// `linksLive`: its transport stalls while its link layer keeps every link up at the
    /// boards (they do not advertise) until the reset; else it is dead: its links end at the
    /// boards, which advertise again, while the host still shows them.
    case hang(adapter: Int, linksLive: Bool = true)
    /// Every connect through an adapter takes longer (a busy radio), and back.
    case slow(adapter: Int, by: Duration)
    case fast(adapter: Int)
    /// An adapter is unplugged, and plugged back.
    case unplug(adapter: Int)
    case replug(adapter: Int)
    /// bluetoothd restarts: every link and device is gone; it is back `after`.
    case restartBluetoothd(after: Duration)

    public var description: String {
        switch self {
        case .boardLosesPower(let board): "\(board) loses power"
        case .boardPowered(let board): "\(board) is powered again"
        case .boardRefuses(let board): "\(board) refuses connects"
        case .boardLeaves(let board, let adapter): "\(board) leaves hci\(adapter)'s range"
        case .boardReturns(let board, let adapter): "\(board) is in hci\(adapter)'s range again"
        case .hang(let adapter, let linksLive):
            "hci\(adapter) hangs until reset (\(linksLive ? "its transport stalls, its links live on at the boards" : "dead: its links end at the boards"))"
        case .slow(let adapter, let by): "hci\(adapter) connects \(by) slower"
        case .fast(let adapter): "hci\(adapter) connects at its speed again"
        case .unplug(let adapter): "hci\(adapter) is unplugged"
        case .replug(let adapter): "hci\(adapter) is plugged back"
        case .restartBluetoothd(let after): "bluetoothd restarts (back after \(after))"
        }
    }
}

extension SimulatedRadio {
    /// Applies a fault now.
    public func apply(_ fault: Fault) async {
        switch fault {
        case .restartBluetoothd(let after):
            let generation = await vanish(mirror: mirror)
            try? await clock.sleep(for: after)
            await appear(generation: generation, mirror: mirror)
        default:
            await change(fault, mirror: mirror)
        }
    }

    private func change(_ fault: Fault, mirror: isolated BlueZObjectMirror) {
        switch fault {
        case .boardLosesPower(let address):
            world.withLock { world in
                world.boards[address]?.powered = false
                world.boards[address]?.led = false
                world.boards[address]?.refuses = false
                world.pending[address] = nil
            }
            dropLink(address, mirror: mirror)
        case .boardPowered(let address):
            world.withLock { $0.boards[address]?.powered = true }
        case .boardRefuses(let address):
            world.withLock { $0.boards[address]?.refuses = true }
        case .boardLeaves(let address, let adapter):
            let linked = world.withLock { world in
                world.boards[address]?.inRange.remove(adapter)
                return world.links[address] == adapter
            }
            if linked { dropLink(address, mirror: mirror) }
        case .boardReturns(let address, let adapter):
            world.withLock { _ = $0.boards[address]?.inRange.insert(adapter) }
        case .hang(let adapter, let linksLive):
            world.withLock { world in
                world.adapters[adapter].hung = true
                guard !linksLive else { return }
                // Dead: the boards' side ends each link (a supervision timeout) and advertises
                // again; the host, told nothing, shows the links until the reset.
                for (address, index) in world.links where index == adapter {
                    world.links[address] = nil
                    world.stale[address] = adapter
                }
            }
        case .slow(let adapter, let by):
            world.withLock { $0.adapters[adapter].slowBy = by }
        case .fast(let adapter):
            world.withLock { $0.adapters[adapter].slowBy = .zero }
        case .unplug(let adapter):
            let (linked, known, plugged) = world.withLock { world in
                let plugged = world.adapters[adapter].plugged
                world.adapters[adapter].plugged = false
                world.adapters[adapter].discovering = false
                world.adapters[adapter].hung = false
                world.pending = world.pending.filter { $0.value != adapter }
                world.stale = world.stale.filter { $0.value != adapter }
                let known = world.known[adapter, default: []].sorted()
                world.known[adapter] = []
                return (world.links.filter { $0.value == adapter }.map(\.key).sorted(), known, plugged)
            }
            guard plugged else { return }
            for address in linked { dropLink(address, mirror: mirror) }
            for address in known {
                mirror.apply(.interfacesRemoved(path: Self.devicePath(address, on: adapter), interfaces: [BlueZInterfaces.device]))
            }
            mirror.apply(.interfacesRemoved(path: "/org/bluez/hci\(adapter)", interfaces: [BlueZInterfaces.adapter]))
        case .replug(let adapter):
            let properties = world.withLock { world -> [String: DBusValue]? in
                guard !world.adapters[adapter].plugged else { return nil }
                world.adapters[adapter].plugged = true
                world.adapters[adapter].powered = true
                world.adapters[adapter].discovering = false
                return Self.adapterProperties(world.adapters[adapter])
            }
            if let properties {
                mirror.apply(.interfacesAdded(path: "/org/bluez/hci\(adapter)", interfaces: [BlueZInterfaces.adapter: properties]))
            }
        case .restartBluetoothd:
            break
        }
    }

    /// bluetoothd leaves the bus: every link, connect and device object with it.
    private func vanish(mirror: isolated BlueZObjectMirror) -> Int {
        let generation = world.withLock { world in
            world.generation += 1
            world.present = false
            world.links = [:]
            world.pending = [:]
            world.stale = [:]
            world.known = [:]
            world.notifying = []
            for index in world.adapters.indices { world.adapters[index].discovering = false }
            return world.generation
        }
        mirror.lose()
        return generation
    }

    // MARK: What the referee reads

    /// The LED of each board now, by address.
    public var leds: [String: Bool] { world.withLock { $0.boards.mapValues(\.led) } }
    /// The links up now: board address → adapter name.
    public var links: [String: String] { world.withLock { $0.links.mapValues { "hci\($0)" } } }
    /// Whether each board is powered and in some adapter's range.
    public var reachable: [String: Bool] {
        world.withLock { world in
            world.boards.mapValues { board in
                board.powered && !board.refuses
                    && board.inRange.contains { world.adapters[$0].plugged }
            }
        }
    }
    public var connectCalls: Int { world.withLock { $0.connectCalls } }
    /// Whether controller hci`index` hangs now (answers nothing until it is reset).
    public func isHung(_ index: Int) -> Bool {
        world.withLock { $0.adapters.indices.contains(index) && $0.adapters[index].hung }
    }
    /// How many times `Connect` was called for the board at `address`.
    public func connects(of address: String) -> Int { world.withLock { $0.connectsOf[address] ?? 0 } }
    /// Whether no fault holds now: bluetoothd there, every adapter plugged, powered, answering
    /// and at its speed, every board powered, answering and in range of an adapter.
    public var isCalm: Bool {
        world.withLock { world in
            world.present
                && world.adapters.allSatisfy { $0.plugged && $0.powered && !$0.hung && $0.slowBy == .zero }
                && world.boards.values.allSatisfy { board in
                    board.powered && !board.refuses && board.inRange.contains { world.adapters[$0].plugged }
                }
        }
    }
}
