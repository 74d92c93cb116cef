import BlueZ
import Testing

@testable import FleetCore

/// What clients take from the fleet (``DeviceLeases``): the devices each user holds. The
/// slots their links hold are their adapter's ledger's (``AdapterLedgerTests``).
@Suite struct DeviceLeasesTests {
    func address(_ n: Int) -> BoardAddress { BoardAddress("F0:0D:00:00:00:0\(n)")! }
    let hci0: AdapterPath = "/org/bluez/hci0"
    let alice = LeaseHolder(1, uid: 1000)
    let alicesOther = LeaseHolder(2, uid: 1000)
    let bob = LeaseHolder(3, uid: 1001)

    func device(_ n: Int, on adapter: AdapterPath) -> DevicePath { DevicePath(adapter: adapter, address: "F0:0D:00:00:00:0\(n)") }

    @Test func aUserHoldsAtMostTheBoundOverAllItsConnections() {
        let leases = DeviceLeases()
        #expect(leases.begin(alice, for: address(1), bound: 2) == nil)
        #expect(leases.add(alice, to: address(1), devicePath: device(1, on: hci0), adapterPath: hci0, isBoard: false) { _ in } == .first)
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
}
