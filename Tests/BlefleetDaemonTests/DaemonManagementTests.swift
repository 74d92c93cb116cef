@testable import BlefleetDaemon
import FleetCore
import Testing

/// Which kernel releases the daemon's links: only the one behind the BlueZ it talks to.
@Suite struct DaemonManagementTests {
    @Test func thisMachinesSystemBusMeansThisMachinesKernel() {
        #expect(Daemon.management(bus: "system", environment: [:]) == .kernel)
        #expect(Daemon.management(
            bus: "system", environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/run/dbus/system_bus_socket"]) == .kernel)
    }

    @Test func anotherBusHasNoKernelOfOursBehindIt() {
        #expect(Daemon.management(bus: "unix:path=/tmp/testbed/bus", environment: [:]) == .none)
        #expect(Daemon.management(bus: "system", environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/testbed/bus"]) == .none)
    }

    @Test func aRelayIsUsedWhenNamed() {
        #expect(Daemon.management(
            bus: "unix:path=/tmp/testbed/bus", environment: ["BLEFLEET_MGMT_SOCKET": "/tmp/testbed/mgmt.sock"])
            == .relay(path: "/tmp/testbed/mgmt.sock"))
        #expect(Daemon.management(bus: "system", environment: ["BLEFLEET_MGMT_SOCKET": ""]) == .kernel)
    }
}
