/// The kernel's Bluetooth management interface as the client uses it: links taken down at
/// once, controllers reset and asked whether they still answer. ``ManagementInterface`` is
/// the kernel's (or a testbed's relay of it); a simulated radio brings its own, whose
/// controllers hang and answer as it says.
public protocol ControllerManagement: Sendable {
    func disconnect(
        controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration
    ) async throws(ManagementInterface.Failure)
    func setPowered(controller index: UInt16, _ on: Bool, timeout: Duration) async throws(ManagementInterface.Failure)
    func closeController(_ index: UInt16, timeout: Duration) async throws(ManagementInterface.Failure)
    func connectionRSSI(
        controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration
    ) async throws(ManagementInterface.Failure) -> Int?
    func readLocalClock(
        controller index: UInt16, timeout: Duration
    ) async throws(ManagementInterface.Failure) -> (status: UInt8, took: Duration)
}

extension ManagementInterface: ControllerManagement {}

extension ControllerManagement {
    func disconnect(controller index: UInt16, address: String, type: ManagementInterface.AddressType)
        async throws(ManagementInterface.Failure)
    {
        try await disconnect(controller: index, address: address, type: type, timeout: .seconds(3))
    }

    func setPowered(controller index: UInt16, _ on: Bool) async throws(ManagementInterface.Failure) {
        try await setPowered(controller: index, on, timeout: .seconds(12))
    }

    func closeController(_ index: UInt16) async throws(ManagementInterface.Failure) {
        try await closeController(index, timeout: .seconds(20))
    }

    func connectionRSSI(controller index: UInt16, address: String, type: ManagementInterface.AddressType)
        async throws(ManagementInterface.Failure) -> Int?
    {
        try await connectionRSSI(controller: index, address: address, type: type, timeout: .seconds(4))
    }

    func readLocalClock(controller index: UInt16) async throws(ManagementInterface.Failure) -> (status: UInt8, took: Duration) {
        try await readLocalClock(controller: index, timeout: .seconds(4))
    }
}
