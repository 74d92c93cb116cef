extension BlueZClient {
    /// Whether BlueZ holds a pairing with the device at `path` now (`Paired`), and a bond
    /// (`Bonded`, BlueZ 5.66 and later; `Paired` where BlueZ does not say).
    public func pairing(at path: DevicePath) async -> (paired: Bool, bonded: Bool)? {
        guard let properties = await mirror.tree.properties(path.rawValue, BlueZInterfaces.device) else { return nil }
        let paired = properties["Paired"]?.bool ?? false
        return (paired, properties["Bonded"]?.bool ?? paired)
    }

    /// Pairs with the device as bleak's BlueZ backend does: `Trusted=true`, then
    /// `Device1.Pair`, with this client's agent answering what bluetoothd asks through
    /// `responder`. Returns false when the device was paired already (nothing is done, as
    /// bleak does; BlueZ would answer `AlreadyExists`). A pairing that runs out of time is
    /// cancelled (`CancelPairing`). Throws `BlueZError`: `inProgress` when a pairing of the
    /// device is under way, `authenticationFailed` when the device or the agent refused.
    public func pair(_ device: BlueZDevice, timeout: Duration, responder: @escaping PairingResponder) async throws -> Bool {
        if await pairing(at: device.path)?.paired == true { return false }
        let path = device.path.rawValue
        if let agent {
            try await agent.register(on: self)
            guard agent.expect(path, responder: responder) else {
                throw BlueZError.inProgress("a pairing of \(device.address) is under way already")
            }
        }
        defer { agent?.forget(path) }
        try await setProperty(path, BlueZInterfaces.device, "Trusted", .boolean(true), timeout: .seconds(5))
        do {
            try await call(path, BlueZInterfaces.device, "Pair", timeout: timeout)
            return true
        } catch BlueZError.alreadyExists {
            return false
        } catch BlueZError.timeout(let message) {
            // Also when the caller was cancelled: a call from a cancelled task is never sent,
            // so the cancel runs in a task of its own.
            await Task { try? await self.call(path, BlueZInterfaces.device, "CancelPairing", timeout: .seconds(5)) }.value
            throw BlueZError.timeout(message)
        }
    }
}
