import BlueZ
import DBus
import Testing

@testable import FleetCore

/// An adapter's connection slots in one ledger (``AdapterLedger``), against BlueZ's object
/// tree: random trees of links, connects and leases, each step checked against what the tree
/// says; placement never promises a slot past the limit; the fleet's reserve is never lent;
/// and a standby board's "room here?" is placement's own answer.
@Suite struct AdapterLedgerTests {
    static let adapters: [AdapterPath] = ["/org/bluez/hci0", "/org/bluez/hci1", "/org/bluez/hci2"]
    static let addresses = (1...8).map { BoardAddress("F0:0D:00:00:00:0\($0)")! }

    /// A random BlueZ world: the tree's devices (on which adapters, linked or not), and the
    /// fleet's ledgers of those adapters fed as the fleet feeds them.
    struct World {
        var random: SeededRandomNumberGenerator
        /// Device Connected / ServicesResolved, by adapter and address (absent: no object).
        var devices: [AdapterPath: [BoardAddress: (connected: Bool, resolved: Bool)]] = [:]
        var ledgers: [AdapterPath: AdapterLedger]

        init(seed: UInt64) {
            random = SeededRandomNumberGenerator(seed: seed)
            var ledgers: [AdapterPath: AdapterLedger] = [:]
            for path in AdapterLedgerTests.adapters {
                ledgers[path] = AdapterLedger(limit: Int.random(in: 1...4, using: &random), reserve: Int.random(in: 0...2, using: &random))
            }
            self.ledgers = ledgers
        }

        var tree: BlueZObjectTree {
            var objects: [String: [String: BlueZObjectTree.Properties]] = [:]
            for (adapter, devices) in devices {
                for (address, state) in devices {
                    objects[DevicePath(adapter: adapter, address: address.rawValue).rawValue] = [BlueZInterfaces.device: [
                        "Adapter": .objectPath(adapter.rawValue), "Address": .string(address.rawValue),
                        "Connected": .boolean(state.connected), "ServicesResolved": .boolean(state.resolved), "RSSI": .int16(-60),
                    ]]
                }
            }
            return BlueZObjectTree(objects: objects)
        }

        /// The links through `adapter` by the tree's own words: its device objects there with
        /// Connected or ServicesResolved.
        func linksTheTreeShows(_ adapter: AdapterPath) -> Set<BoardAddress> {
            Set(tree.objects(implementing: BlueZInterfaces.device).compactMap { object in
                let properties = object.properties
                guard properties["Adapter"]?.string == adapter.rawValue,
                    properties["Connected"]?.bool == true || properties["ServicesResolved"]?.bool == true
                else { return nil }
                return BoardAddress(properties["Address"]?.string ?? "")
            })
        }

        mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }
        mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }

        /// What BlueZ reports: a device heard or gone, a link up or down (ours or anyone's).
        mutating func bluezChanges() {
            let adapter = pick(AdapterLedgerTests.adapters)
            let address = pick(AdapterLedgerTests.addresses)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: devices[adapter, default: [:]][address] = (false, false)
            case 1: devices[adapter]?[address] = nil
            case 2:
                let link = (chance(0.5), chance(0.5))
                if devices[adapter]?[address] != nil { devices[adapter]?[address] = link }
            default: if devices[adapter]?[address] != nil { devices[adapter]?[address] = (false, false) }
            }
            // The fleet's mirror tells the adapter's ledger of every link change.
            let shown = tree.linkedAddresses(onAdapter: adapter).compactMap { BoardAddress($0) }
            ledgers[adapter]?.linksShown(shown)
        }

        /// Placement as the fleet places a board (``FleetContext``): every adapter that has
        /// its device, each weighed by its ledger's candidate.
        func placement(of board: BoardAddress) -> Placement.Decision {
            let candidates = AdapterLedgerTests.adapters.compactMap { path -> Placement.Candidate? in
                guard devices[path]?[board] != nil, let ledger = ledgers[path] else { return nil }
                return ledger.candidate(path: path, for: board, rssi: -60, recentFailures: 0)
            }
            return Placement.choose(candidates)
        }
    }

    @Test(arguments: 1...150 as ClosedRange<UInt64>)
    func theLedgerCountsWhatTheTreeShowsAndNeverOvercommits(seed: UInt64) {
        var world = World(seed: seed)
        for _ in 0..<300 {
            let board = world.pick(Self.addresses)
            switch Int.random(in: 0..<6, using: &world.random) {
            case 0, 1:
                world.bluezChanges()
            case 2:
                // A board's connect is placed (a linked board is not): never past an adapter's limit.
                guard !Self.adapters.contains(where: { world.linksTheTreeShows($0).contains(board) }),
                    case .connect(let path) = world.placement(of: board)
                else { break }
                let before = world.ledgers[path]!.committed()
                world.ledgers[path]!.claim(board)
                let after = world.ledgers[path]!.committed()
                #expect(
                    after.count <= world.ledgers[path]!.limit || after == before,
                    "seed \(seed): placement promised \(board) a slot on \(path) past its limit")
            case 3:
                // Its turn: the slot taken as the connect takes one (``ConnectionSlots``).
                let path = world.pick(Self.adapters)
                guard var ledger = world.ledgers[path], ledger.queued.contains(board) else { break }
                let links = ledger.held(except: board).map { ConnectionSlots.Link(address: $0, lastUsed: .now, isBusy: true) }
                if ConnectionSlots.decide(for: board, links: links, limit: ledger.limit) == .available {
                    ledger.linking(board)
                    #expect(ledger.held().count <= ledger.limit, "seed \(seed): a slot given past the limit")
                }
                world.ledgers[path] = ledger
            case 4:
                let path = world.pick(Self.adapters)
                if world.chance(0.5) {
                    // The connect is done: its link, if it came, is BlueZ's to show.
                    if world.ledgers[path]!.linking.contains(board), world.chance(0.7) {
                        let resolved = world.chance(0.5)
                        world.devices[path, default: [:]][board] = (true, resolved)
                        let shown = world.tree.linkedAddresses(onAdapter: path).compactMap { BoardAddress($0) }
                        world.ledgers[path]!.linksShown(shown)
                    }
                    world.ledgers[path]!.unclaim(board)
                } else {
                    // A client's connect or lease, or its end.
                    let before = world.ledgers[path]!.lent.count
                    switch Int.random(in: 0..<4, using: &world.random) {
                    case 0:
                        let refusal = world.ledgers[path]!.lend(board)
                        #expect((refusal != nil) == (world.ledgers[path]!.lent[board] == nil))
                        if refusal != nil { #expect(before == world.ledgers[path]!.lendable) }
                    case 1: _ = world.ledgers[path]!.lease(board)
                    case 2: world.ledgers[path]!.connectEnded(board)
                    default: world.ledgers[path]!.leaseEnded(board)
                    }
                }
            default:
                // A board in standby asks for room where it is heard: placement's own answer.
                for path in Self.adapters where world.devices[path]?[board] != nil {
                    let ledger = world.ledgers[path]!
                    guard !ledger.links.contains(board) else { continue }
                    let alone = Placement.choose([ledger.candidate(path: path, for: board, rssi: -60, recentFailures: 0)])
                    #expect((ledger.free(for: board) > 0) == (alone == .connect(path)), "seed \(seed): room and placement disagree")
                }
            }
            for path in Self.adapters {
                let ledger = world.ledgers[path]!
                let shown = world.linksTheTreeShows(path)
                // Its counts are the tree's links and its own claims, nothing else.
                #expect(ledger.links == shown, "seed \(seed): \(path)'s ledger has other links than the tree")
                #expect(ledger.held() == shown.union(ledger.linking))
                #expect(ledger.free() == max(0, ledger.limit - shown.union(ledger.placed).union(ledger.linking).count))
                #expect(Set(ledger.queued).isDisjoint(with: ledger.linking))
                // The fleet's reserve is never lent.
                #expect(ledger.lent.count <= ledger.lendable, "seed \(seed): \(path) lent its reserve")
                #expect(ledger.lendable + ledger.reserve == ledger.limit)
            }
        }
    }

    @Test func clientsNeverTakeTheReserve() {
        let (one, two, three) = (Self.addresses[0], Self.addresses[1], Self.addresses[2])
        // Two slots, one kept for the fleet: one to lend.
        var ledger = AdapterLedger(limit: 2, reserve: 1)
        #expect(ledger.lend(one) == nil)
        #expect(ledger.lend(two) == AdapterLedger.Refusal(lent: 1, lendable: 1))
        // The connect that got the slot becomes the lease, which keeps it past the connect's end.
        #expect(ledger.lease(one) == nil)
        ledger.connectEnded(one)
        #expect(ledger.isLeased(one))
        #expect(ledger.lend(three) != nil)
        // A board leased through a full adapter is refused: it stays the fleet's.
        #expect(ledger.lease(two) == AdapterLedger.Refusal(lent: 1, lendable: 1))
        // Sharing a link already leased takes no other slot.
        #expect(ledger.lease(one) == nil)
        // The slot comes back with the lease.
        ledger.leaseEnded(one)
        #expect(ledger.lent.isEmpty)
        #expect(ledger.lend(three) == nil)
    }

    @Test func anAdapterLendsItsLimitLessTheReserve() {
        #expect(AdapterLedger(limit: 7, reserve: 1).lendable == 6)
        // One slot: kept for the fleet, lent to no client.
        #expect(AdapterLedger(limit: 1, reserve: 1).lendable == 0)
        #expect(AdapterLedger(limit: 1, reserve: 0).lendable == 1)
        #expect(AdapterLedger(limit: 3, reserve: 9).lendable == 0)
        #expect(AdapterLedger(limit: 3, reserve: -2).reserve == 0)
    }

    @Test func queuedConnectsArePromisedTheirSlotsAndHoldOneOnceGivenIt() {
        let (one, two, three) = (Self.addresses[0], Self.addresses[1], Self.addresses[2])
        var ledger = AdapterLedger(limit: 2, reserve: 0)
        ledger.linksShown([one])
        ledger.claim(two)
        ledger.claim(three)
        // Placed at the same moment, they see each other: no room for a fourth.
        #expect(ledger.free(for: Self.addresses[3]) == 0)
        #expect(ledger.free(for: three) == 0)
        #expect(ledger.queued == [two, three])
        #expect(ledger.place(of: three).inQueue && ledger.place(of: three).ahead == 1)
        ledger.linking(two)
        #expect(ledger.held() == [one, two])
        #expect(ledger.place(of: two).inQueue && ledger.place(of: two).ahead == nil)
        // Its link shown and its connect done: the link holds the slot now.
        ledger.linksShown([one, two])
        ledger.unclaim(two)
        #expect(ledger.held() == [one, two])
        #expect(ledger.queued == [three])
    }
}
