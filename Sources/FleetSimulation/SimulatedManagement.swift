public import BlueZ

/// The kernel's management interface of the simulated controllers: a hung controller
/// answers nothing (the kernel's HCI command timeout, 2 s), a close or a power-on resets it.
public struct SimulatedManagement: ControllerManagement {
    let radio: SimulatedRadio

    /// The kernel's HCI command timeout: how long a question to a hung controller takes.
    static let commandTimeout: Duration = .seconds(2)

    private func hung(_ index: UInt16) -> Bool? {
        radio.world.withLock { world in
            world.adapters.indices.contains(Int(index)) && world.adapters[Int(index)].plugged
                ? world.adapters[Int(index)].hung : nil
        }
    }

    private func linked(_ address: String, _ index: UInt16) -> Bool {
        radio.world.withLock { $0.links[address.uppercased()] == Int(index) }
    }

    public func disconnect(
        controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration
    ) async throws(ManagementInterface.Failure) {
        guard let hung = hung(index) else { throw .status(0x11) }  // invalid index
        if hung {
            try? await radio.clock.sleep(for: timeout)
            throw .timeout
        }
        guard linked(address, index) else { throw .status(ManagementInterface.Failure.notConnected) }
        try? await radio.clock.sleep(for: .milliseconds(10))
        await radio.dropLink(address.uppercased(), ifThrough: Int(index), mirror: radio.mirror)
    }

    public func setPowered(controller index: UInt16, _ on: Bool, timeout: Duration) async throws(ManagementInterface.Failure) {
        guard let hung = hung(index) else { throw .status(0x11) }
        if hung && !on {
            // The kernel gives up at the first command the controller does not answer.
            try? await radio.clock.sleep(for: Self.commandTimeout)
            throw .status(ManagementInterface.Failure.commandTimedOut)
        }
        try? await radio.clock.sleep(for: .milliseconds(200))
        if on { radio.world.withLock { $0.adapters[Int(index)].hung = false } }
        await radio.power(on, adapter: Int(index), mirror: radio.mirror)
    }

    public func closeController(_ index: UInt16, timeout: Duration) async throws(ManagementInterface.Failure) {
        guard hung(index) != nil else { throw .status(0x11) }
        try? await radio.clock.sleep(for: .milliseconds(100))
        await radio.power(false, adapter: Int(index), mirror: radio.mirror)
    }

    public func connectionRSSI(
        controller index: UInt16, address: String, type: ManagementInterface.AddressType, timeout: Duration
    ) async throws(ManagementInterface.Failure) -> Int? {
        guard let hung = hung(index) else { throw .status(0x11) }
        if hung {
            try? await radio.clock.sleep(for: Self.commandTimeout)
            throw .status(ManagementInterface.Failure.commandTimedOut)
        }
        guard linked(address, index) else { throw .status(ManagementInterface.Failure.notConnected) }
        try? await radio.clock.sleep(for: .milliseconds(5))
        return radio.world.withLock { world in world.boards[address.uppercased()]?.rssi[Int(index)].map(Int.init) }
    }

    public func readLocalClock(
        controller index: UInt16, timeout: Duration
    ) async throws(ManagementInterface.Failure) -> (status: UInt8, took: Duration) {
        guard let hung = hung(index) else { throw .status(0x11) }
        let took = hung ? Self.commandTimeout : .milliseconds(5)
        try? await radio.clock.sleep(for: took)
        // Linux 6.1 answers `not connected` for BDADDR_ANY whatever the controller did.
        return (hung ? ManagementInterface.Failure.commandTimedOut : ManagementInterface.Failure.notConnected, took)
    }
}
