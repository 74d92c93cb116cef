import Testing

@testable import FleetCore

/// The ledger of what clients take from the fleet (``DeviceLeases``): the devices each user
/// holds, and the slots clients' links hold on each adapter, never its reserve.
@Suite struct DeviceLeasesTests {
    func address(_ n: Int) -> BoardAddress { BoardAddress("F0:0D:00:00:00:0\(n)")! }
    let hci0 = "/org/bluez/hci0"
    let hci1 = "/org/bluez/hci1"
    let alice = LeaseHolder(1, uid: 1000)
    let alicesOther = LeaseHolder(2, uid: 1000)
    let bob = LeaseHolder(3, uid: 1001)

    func device(_ n: Int, on adapter: String) -> String { "\(adapter)/dev_F0_0D_00_00_00_0\(n)" }

    @Test func aUserHoldsAtMostTheBoundOverAllItsConnections() {
        let leases = DeviceLeases()
        #expect(leases.begin(alice, for: address(1), bound: 2) == nil)
        #expect(leases.add(alice, to: address(1), devicePath: device(1, on: hci0), adapterPath: hci0, isBoard: false, lendable: 5) { _ in } == .first)
        leases.end(alice, for: address(1))
        // Connecting counts as holding: a second connect under way on another connection.
        #expect(leases.begin(alicesOther, for: address(2), bound: 2) == nil)
        #expect(leases.begin(alice, for: address(3), bound: 2) == .userBound(held: 2))
        // The device the user holds already may be asked for again (a second connection shares it).
        #expect(leases.begin(alicesOther, for: address(1), bound: 2) == nil)
        leases.end(alicesOther, for: address(1))
        // Another user is counted apart.
        #expect(leases.begin(bob, for: address(3), bound: 2) == nil)
        leases.end(bob, for: address(3))
        // The connect that was under way gave up: its place is free again.
        leases.end(alicesOther, for: address(2))
        #expect(leases.count(of: 1000) == 1)
        #expect(leases.begin(alice, for: address(3), bound: 2) == nil)
        // A bound of 0 lends a user nothing.
        #expect(leases.begin(bob, for: address(4), bound: 0) == .userBound(held: 0))
    }

    @Test func clientsNeverTakeAnAdaptersReserve() {
        let leases = DeviceLeases()
        // Two slots, one kept for the fleet: one to lend.
        #expect(leases.lend(address(1), on: hci0, lendable: 1))
        #expect(!leases.lend(address(2), on: hci0, lendable: 1))
        #expect(leases.lend(address(2), on: hci1, lendable: 1))
        // The connect that got the slot becomes the lease, which keeps it.
        #expect(leases.add(alice, to: address(1), devicePath: device(1, on: hci0), adapterPath: hci0, isBoard: false, lendable: 1) { _ in } == .first)
        leases.unlend(address(1))
        #expect(leases.lent(on: hci0) == 1)
        #expect(!leases.lend(address(3), on: hci0, lendable: 1))
        // A board leased through a full adapter is refused: it stays the fleet's.
        #expect(
            leases.add(bob, to: address(4), devicePath: device(4, on: hci0), adapterPath: hci0, isBoard: true, lendable: 1) { _ in }
                == .refused(.adapterReserve(lent: 1, lendable: 1)))
        #expect(!leases.isLeased(address(4)))
        // Sharing a link already leased takes no other slot.
        #expect(leases.add(bob, to: address(1), devicePath: device(1, on: hci0), adapterPath: hci0, isBoard: false, lendable: 1) { _ in } == .joined)
        // The slot comes back with the last holder.
        #expect(leases.remove(alice, from: address(1)) == nil)
        #expect(leases.remove(bob, from: address(1)) != nil)
        #expect(leases.lent(on: hci0) == 0)
        #expect(leases.lend(address(3), on: hci0, lendable: 1))
    }

    @Test func anAdapterLendsItsLimitLessTheReserve() {
        #expect(FleetConfiguration().lendableSlots(limit: 7) == 6)
        #expect(FleetConfiguration(reservedFleetSlots: 1).lendableSlots(limit: 2) == 1)
        // One slot: kept for the fleet, lent to no client.
        #expect(FleetConfiguration(reservedFleetSlots: 1).lendableSlots(limit: 1) == 0)
        #expect(FleetConfiguration(reservedFleetSlots: 0).lendableSlots(limit: 1) == 1)
        #expect(FleetConfiguration(reservedFleetSlots: 9).lendableSlots(limit: 3) == 0)
        #expect(FleetConfiguration(reservedFleetSlots: -2).reservedFleetSlots == 0)
    }
}
