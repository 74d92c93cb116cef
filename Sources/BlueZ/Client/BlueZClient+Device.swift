import Synchronization

extension BlueZClient {
    public func device(at path: String) async -> BlueZDevice? {
        await mirror.tree.device(at: path)
    }

    /// The device with `address` on `adapter`, if BlueZ knows it now.
    public func device(address: String, adapter: BlueZAdapter) async -> BlueZDevice? {
        await mirror.tree.devices(onAdapter: adapter.path).first {
            $0.address.uppercased() == address.uppercased()
        }
    }

    /// Connects and returns only once BlueZ has resolved the device's services
    /// (`ServicesResolved=true`): `Device1.Connect` itself returns earlier.
    ///
    /// Idempotent: a resolved device returns at once. Fails fast when the device disconnects
    /// before resolving or its object vanishes, and with `.timeout` after `timeout`.
    ///
    /// What real bluetoothd does that this accounts for:
    /// - when it finds the link already up (`device_add_connection() … is already
    ///   connected`), the device gets `ServicesResolved=true` but never `Connected=true`:
    ///   resolved services alone mean the link is usable;
    /// - a `Connect` whose caller gave up stays pending in bluetoothd (later ones fail with
    ///   "Operation already in progress") and may complete later as a link nobody owns:
    ///   every failed or timed-out attempt is cleaned up with `Device1.Disconnect`, which
    ///   cancels a pending connect and drops a link that came up without resolving.
    public func connect(_ device: BlueZDevice, timeout: Duration = .seconds(30)) async throws {
        let start = ContinuousClock.now
        let path = device.path
        if let current = await mirror.tree.device(at: path), current.servicesResolved { return }
        // Registered before Connect so no transition it causes is missed.
        let sawConnected = Mutex(false)
        let ticket = await mirror.register { snapshot -> MirrorWaitStep<Void> in
            guard let current = snapshot.tree.device(at: path) else {
                return .failed(
                    snapshot.isLoaded
                        ? .objectVanished("device \(path) vanished while connecting")
                        : .serviceUnavailable("org.bluez left the bus while connecting"))
            }
            if current.servicesResolved { return .done(()) }
            let lost = sawConnected.withLock { seen in
                if current.connected { seen = true; return false }
                return seen
            }
            return lost ? .failed(.connectionFailed(.leUnknown, "disconnected before services were resolved")) : .pending
        }
        do {
            do {
                try await call(path, BlueZInterfaces.device, "Connect", timeout: timeout)
            } catch BlueZError.alreadyConnected {
                // BlueZ says it is connected; the wait below sees it resolved.
            }
            let remaining = timeout - (ContinuousClock.now - start)
            try await mirror.result(
                of: ticket, timeout: max(remaining, .milliseconds(1)),
                description: "services of \(device.address) not resolved within \(timeout)")
        } catch {
            await mirror.discard(ticket)
            await abandonConnect(device, after: error)
            throw error
        }
    }

    /// Cleans up after a connect that failed or timed out: cancels bluetoothd's pending
    /// connect and drops a half-made link, unless BlueZ is gone or the object vanished.
    private func abandonConnect(_ device: BlueZDevice, after error: any Error) async {
        switch error as? BlueZError {
        case .serviceUnavailable, .busDisconnected, .objectVanished, .notFound:
            return
        default:
            try? await disconnect(device, timeout: .seconds(5))
        }
    }

    /// Disconnects and returns once BlueZ reports `Connected=false` (or the device is gone).
    /// Idempotent: a disconnected device returns at once.
    public func disconnect(_ device: BlueZDevice, timeout: Duration = .seconds(10)) async throws {
        let path = device.path
        let ticket = await mirror.register { snapshot -> MirrorWaitStep<Void> in
            guard let current = snapshot.tree.device(at: path) else { return .done(()) }
            return current.hasLink ? .pending : .done(())
        }
        do {
            try await call(path, BlueZInterfaces.device, "Disconnect", timeout: timeout)
        } catch BlueZError.notConnected, BlueZError.objectVanished {
            // Already disconnected or gone: what was asked for.
        } catch {
            await mirror.discard(ticket)
            throw error
        }
        try await mirror.result(
            of: ticket, timeout: timeout, description: "\(device.address) still connected after \(timeout)")
    }
}
