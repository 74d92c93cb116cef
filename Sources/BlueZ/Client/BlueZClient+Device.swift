import Synchronization

extension BlueZClient {
    public func device(at path: DevicePath) async -> BlueZDevice? {
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
    ///
    /// `linkUp`, when given, is called once when BlueZ shows the link up (`Connected=true`,
    /// or resolved services), before the services are resolved: the controller's connect
    /// procedure is over, so the next connect on the adapter may start while this one's
    /// services resolve. It runs on the mirror's actor: it must not block.
    public func connect(
        _ device: BlueZDevice, timeout: Duration = .seconds(30), linkUp: (@Sendable () -> Void)? = nil
    ) async throws {
        let start = clock.now
        let path = device.path
        let attempt = connectsBegun.withLock { begun in
            begun[path.rawValue, default: 0] += 1
            return begun[path.rawValue, default: 0]
        }
        if let current = await mirror.tree.device(at: path), current.servicesResolved {
            linkUp?()
            return
        }
        // Registered before Connect so no transition it causes is missed.
        let sawConnected = Mutex(false)
        let ticket = await mirror.register(watching: path.rawValue) { snapshot -> MirrorWaitStep<Void> in
            guard let current = snapshot.tree.link(at: path) else {
                return .failed(
                    snapshot.isLoaded
                        ? .objectVanished("device \(path) vanished while connecting")
                        : .serviceUnavailable("org.bluez left the bus while connecting"))
            }
            if current.servicesResolved {
                if sawConnected.withLock({ seen in defer { seen = true }; return !seen }) { linkUp?() }
                return .done(())
            }
            let (lost, up) = sawConnected.withLock { seen -> (Bool, Bool) in
                if current.connected { defer { seen = true }; return (false, !seen) }
                return (seen, false)
            }
            if up { linkUp?() }
            return lost ? .failed(.connectionFailed(.leUnknown, "disconnected before services were resolved")) : .pending
        }
        do {
            do {
                try await call(path.rawValue, BlueZInterfaces.device, "Connect", timeout: timeout)
            } catch BlueZError.alreadyConnected {
                // BlueZ says it is connected; the wait below sees it resolved.
            }
            let remaining = timeout - clock.since(start)
            try await mirror.result(
                of: ticket, timeout: max(remaining, .milliseconds(1)),
                description: "services of \(device.address) not resolved within \(timeout)")
        } catch {
            await mirror.discard(ticket)
            // Also when the caller was cancelled: a call from a cancelled task is never sent,
            // and the Connect already sent goes on in bluetoothd, holding a slot the fleet
            // would count free. The clean-up runs in a task of its own, and is awaited.
            await Task { await self.abandonConnect(device, after: error) }.value
            Task { await self.releaseIfItComesUp(device, abandoned: attempt) }
            throw error
        }
    }

    /// A connect abandoned just as its controller made the link can still bring it up after
    /// its clean-up: bluetoothd 5.66 answers a `Disconnect` that finds no link yet at once
    /// (`device_request_disconnect`), and when the kernel's link comes up after it, the
    /// GATT server's listening ATT socket takes it and bluetoothd resolves the device's
    /// services: a link nobody holds (the crowd benchmark: a script killed mid-connect left
    /// one, 1 of 3). For ``abandonedLinkWatch`` after the clean-up such a link is released,
    /// unless a newer connect of the device began meanwhile (it is that connect's).
    /// Returns whether it released one.
    @discardableResult
    func releaseIfItComesUp(_ device: BlueZDevice, abandoned attempt: UInt64) async -> Bool {
        let path = device.path
        let ticket = await mirror.register(watching: path.rawValue) { snapshot -> MirrorWaitStep<Void> in
            (snapshot.tree.hasLink(at: path) ?? false) ? .done(()) : .pending
        }
        do {
            try await mirror.result(of: ticket, timeout: Self.abandonedLinkWatch, description: "no link after an abandoned connect")
        } catch {
            return false  // nothing came up (or BlueZ went): nothing to release
        }
        guard connectsBegun.withLock({ $0[path.rawValue] }) == attempt else { return false }
        logger.notice(
            "a link came up after its connect was abandoned; releasing it",
            metadata: ["ble.address": "\(device.address)", "dbus.path": "\(path)"])
        try? await disconnect(device, timeout: .seconds(5))
        return true
    }

    /// How long after an abandoned connect's clean-up a link that comes up is still its own:
    /// the controller's connect completing, then bluetoothd's 2 s disconnect timer at most.
    static let abandonedLinkWatch: Duration = .seconds(3)

    /// Returns once the mirror has had no new object under the device at `path` for
    /// ``gattQuiet`` (at most ``gattSettleBound``): what a client is handed of a device just
    /// connected is taken after it (``connect(_:timeout:linkUp:)`` itself returns at
    /// `ServicesResolved`: the fleet's own connects read their characteristics as they come). bluetoothd's
    /// D-Bus layer sends the changes it holds in the order the objects first had one
    /// (gdbus/object.c: `add_pending`, `g_dbus_flush`): a device with a change held since
    /// before its services were exported signals `ServicesResolved` before its services' and
    /// characteristics' `InterfacesAdded`, in the same burst, so a connect that returned at
    /// `ServicesResolved` could hand its caller a tree without them (on the real lane, one
    /// connect in a few of two at once: a characteristic missing). Asking bluetoothd for its
    /// objects instead (`GetManagedObjects` after each connect) was tried: bluetoothd 5.66 died
    /// more often in the board-side drop schedule with it (3 runs in 12 against 0 in 10).
    ///
    /// Throws `CancellationError` when the caller is cancelled meanwhile.
    public func gattObjectsSettled(under path: DevicePath) async throws {
        let prefix = path.rawValue + "/"
        func count() async -> Int { await mirror.tree.objects.keys.count { $0.hasPrefix(prefix) } }
        let deadline = clock.now + Self.gattSettleBound
        var seen = await count()
        while clock.now < deadline {
            try await clock.sleep(for: Self.gattQuiet)
            let now = await count()
            if now == seen { return }
            seen = now
        }
    }

    /// How long no new GATT object of a device just resolved counts as all of them.
    static let gattQuiet: Duration = .milliseconds(40)
    /// The most a connect waits for a device's GATT objects after its services resolved.
    static let gattSettleBound: Duration = .milliseconds(500)

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
    ///
    /// A link bluetoothd is done setting up (its services resolved) goes down through the
    /// kernel's management interface when this client has one (about 0.1 s; bluetoothd keeps
    /// the device and its GATT objects). A link bluetoothd is still working on (connected, its
    /// services not yet resolved: discovery, or its GATT client being set up) is never taken
    /// from under that work through the kernel: bluetoothd 5.66 has died when it was (issue
    /// 55). Its services are waited for, at most ``resolveWait`` (what is left of a discovery
    /// under way is usually shorter), and the link then goes through the kernel; one still
    /// unresolved goes through `Device1.Disconnect`, which lets bluetoothd cancel its work
    /// first but holds the link for its 2 s disconnect timer. (Asking the kernel as soon as
    /// bluetoothd had handled that `Device1.Disconnect` was tried: Linux 6.1 oopsed, list_del
    /// corruption in `hci_chan_del` as bluetoothd's ATT socket was released, in 2 of 16 such
    /// releases on the real lane.) `Device1.Disconnect` also cancels a connect still
    /// pending, which the kernel cannot. A kernel release waits first for this client's GATT
    /// calls on the device to be answered (``gattSettled(on:)``); one that answered but did
    /// not take within ``kernelReleaseGrace`` is asked of BlueZ too.
    /// Throws ``BlueZError/timeout(_:)`` when the link is still up after `timeout`, or at
    /// once when its controller did not answer the kernel's disconnect.
    public func disconnect(_ device: BlueZDevice, timeout: Duration = .seconds(10)) async throws {
        let path = device.path
        let start = clock.now
        let ticket = await mirror.register(watching: path.rawValue) { snapshot -> MirrorWaitStep<Void> in
            (snapshot.tree.hasLink(at: path) ?? false) ? .pending : .done(())
        }
        let released: Bool
        do {
            await servicesResolvedOrGone(path, within: min(Self.resolveWait, timeout))
            released = try await releaseThroughManagement(path)
        } catch {
            await mirror.discard(ticket)
            throw error
        }
        if released {
            let grace = min(Self.kernelReleaseGrace, timeout)
            do {
                try await mirror.result(
                    of: ticket, timeout: grace, description: "\(device.address) still connected after \(grace)")
                return
            } catch BlueZError.timeout {
                // The kernel said yes and kept the link (seen with a slow controller): BlueZ's way.
                logger.notice(
                    "the kernel kept a link it said it released; asking BlueZ",
                    metadata: ["ble.address": "\(device.address)", "dbus.path": "\(path)"])
            }
        } else {
            await mirror.discard(ticket)
        }
        let left = max(.milliseconds(1), timeout - start.duration(to: clock.now))
        let again = await mirror.register(watching: path.rawValue) { snapshot -> MirrorWaitStep<Void> in
            (snapshot.tree.hasLink(at: path) ?? false) ? .pending : .done(())
        }
        do {
            try await call(path.rawValue, BlueZInterfaces.device, "Disconnect", timeout: left)
        } catch BlueZError.notConnected, BlueZError.objectVanished {
            // Already disconnected or gone: what was asked for.
        } catch {
            await mirror.discard(again)
            throw error
        }
        try await mirror.result(
            of: again, timeout: max(.milliseconds(1), timeout - start.duration(to: clock.now)),
            description: "\(device.address) still connected after \(timeout)")
    }

    /// Waits, at most `bound`, until the device at `path` has no link being set up: its
    /// services resolved, or no link. Returns at once where the kernel would not be asked
    /// anyway (no management interface here).
    ///
    /// Where the mirror shows no link yet, bluetoothd is asked (its `Connected`): the mirror
    /// follows bluetoothd's signals a moment behind, and a connect abandoned in that moment
    /// (a script killed as its link came up: 1 in 9 such kills in the crowd benchmark) was
    /// taken for one with no link and went through `Device1.Disconnect`, held 2 s. bluetoothd
    /// answers after the signals it sent before, so a link it had then is waited for: until
    /// the mirror shows its services resolved, or shows it up and then down.
    private func servicesResolvedOrGone(_ path: DevicePath, within bound: Duration) async {
        guard management != nil, !managementUnusable.load(ordering: .relaxed) else { return }
        let deadline = clock.now + bound
        let shown = await mirror.tree.link(at: path)
        if shown?.servicesResolved == true { return }
        var upAtBlueZ = shown?.connected == true
        if !upAtBlueZ {
            let answer = try? await call(
                path.rawValue, BlueZInterfaces.properties, "Get",
                [.string(BlueZInterfaces.device), .string("Connected")], timeout: bound)
            upAtBlueZ = answer?.first?.bool == true
        }
        guard upAtBlueZ else { return }
        let sawUp = Mutex(false)
        let left = max(.milliseconds(1), clock.now.duration(to: deadline))
        _ = try? await mirror.wait(timeout: left, description: "services resolved or link gone", watching: path.rawValue) {
            snapshot -> MirrorWaitStep<Void> in
            guard let link = snapshot.tree.link(at: path) else { return .done(()) }
            if link.servicesResolved { return .done(()) }
            if link.connected {
                sawUp.withLock { $0 = true }
                return .pending
            }
            return sawUp.withLock { $0 } ? .done(()) : .pending
        }
    }

    /// How long a release waits for bluetoothd to finish resolving the services of a link it
    /// is setting up, so that the link goes through the kernel (0.1 s) rather than through
    /// `Device1.Disconnect` (2 s): a script killed in the middle of a connect usually leaves
    /// the last part of a discovery (issue 55: 2 of 12 such links in the crowd benchmark took
    /// 2.0 s).
    static let resolveWait: Duration = .seconds(1)

    /// How long a link the kernel said it released may stay up before BlueZ is asked.
    static let kernelReleaseGrace: Duration = .milliseconds(1500)

    /// How long a release through the kernel waits for this client's GATT calls on the device
    /// to be answered (a read or write takes 15-40 ms on a link; a `StopNotify` writes the
    /// board's CCC).
    static let gattSettleLimit: Duration = .milliseconds(800)

    /// Waits until no call of this client on the GATT objects of the device at `path` is
    /// unanswered (a write still on its way, the `StopNotify` of a session that just ended),
    /// at most ``gattSettleLimit``. bluetoothd 5.66 has died (a use after free in its ATT
    /// layer, at the device's next connect) when the kernel took a link while a write of
    /// ours was under way on it (issue 55: the fleet put a board's LED back as it became
    /// ready, and a client released it at that moment).
    func gattSettled(on path: String) async {
        let deadline = clock.now + Self.gattSettleLimit
        while gattCalls.any(on: path) || notifySessions.stopping(under: path) {
            guard clock.now < deadline else {
                logger.debug("releasing a link with a GATT call still unanswered", metadata: ["dbus.path": "\(path)"])
                return
            }
            do { try await clock.sleep(for: .milliseconds(10)) } catch { return }
        }
    }
}

extension BlueZClient {
    /// Takes the link of the device at `path` down through the management interface;
    /// false when that cannot be done (no interface here, no link, or the kernel refused).
    /// Throws ``BlueZError/timeout(_:)`` when the controller did not answer the kernel's
    /// disconnect: `Device1.Disconnect` would go to the same controller.
    private func releaseThroughManagement(_ path: DevicePath) async throws -> Bool {
        guard let management, !managementUnusable.load(ordering: .relaxed),
            let device = await mirror.tree.device(at: path), device.hasLink,
            // bluetoothd still setting the link up: its own Disconnect cancels that work first.
            device.servicesResolved,
            let index = Self.controllerIndex(device.adapterPath)
        else { return false }
        await gattSettled(on: path.rawValue)
        // Gone meanwhile (the board's doing): released.
        guard await mirror.tree.device(at: path)?.hasLink == true else { return true }
        do {
            try await management.disconnect(
                controller: index, address: device.address, type: .init(bluez: device.addressType))
            return true
        } catch {
            if error == .timeout || error == .status(0x08) {
                throw BlueZError.timeout("\(device.adapterPath) did not answer the kernel's disconnect: \(error)")
            }
            if error.interfaceUnavailable {
                if !managementUnusable.exchange(true, ordering: .relaxed) {
                    logger.notice(
                        "links are released through BlueZ's Device1.Disconnect, which takes about 2 s each (\(error))")
                }
            } else {
                logger.debug("the kernel did not release the link; asking BlueZ", metadata: ["dbus.path": "\(path)", "error": "\(error)"])
            }
            return false
        }
    }

    /// Resets an adapter's controller through the kernel: closed (`HCIDEVDOWN`, as
    /// `hciconfig down`; a powered-off through the management interface where that is not
    /// possible) and powered on by the kernel itself (bluetoothd follows), which sends it
    /// HCI_Reset and sets it up anew. Returns once BlueZ shows every link of the controller
    /// down (at most ``resetSettles`` after the power-on): a connect through the controller
    /// before bluetoothd took its old links down has it find a device "already connected"
    /// and, in 5.66, die on that device's next ATT traffic (issue 55). Throws when the
    /// interface is not available or the kernel refuses.
    public func resetController(_ adapter: BlueZAdapter) async throws {
        guard let management, let index = Self.controllerIndex(adapter.path) else {
            throw BlueZError.notAvailable("the kernel's Bluetooth management interface is not available to reset \(adapter.name)")
        }
        // A controller that answers nothing cannot be powered off (the kernel gives up at
        // its first unanswered command): closed, it is reset by the power-on.
        do {
            try await management.closeController(index)
        } catch {
            try? await management.setPowered(controller: index, false)
        }
        try await management.setPowered(controller: index, true)
        let path = adapter.path
        do {
            try await mirror.wait(timeout: Self.resetSettles, description: "the links of \(adapter.name) down after its reset") {
                $0.tree.linkedDevices(onAdapter: path).isEmpty ? .done(()) : .pending
            }
        } catch {
            logger.notice(
                "BlueZ still shows links of a controller reset \(Self.resetSettles) ago; connecting through it all the same",
                metadata: ["ble.adapter": "\(adapter.name)", "error": "\(error)"])
        }
    }

    /// How long a reset waits for BlueZ to show the controller's old links down.
    public static let resetSettles: Duration = .seconds(3)

    /// Asks the controller of the device at `path` about its link through the kernel's
    /// management interface: the RSSI it reads from the controller (nil when unknown).
    /// Throws ``BlueZError/timeout(_:)`` when the controller does not answer (the kernel's
    /// HCI command timed out), ``BlueZError/notAvailable(_:)`` when the interface is not
    /// here or the device has no link.
    public func probeLink(_ path: DevicePath) async throws -> Int? {
        guard let management, !managementUnusable.load(ordering: .relaxed),
            let device = await mirror.tree.device(at: path), device.hasLink,
            let index = Self.controllerIndex(device.adapterPath)
        else { throw BlueZError.notAvailable("no link to probe through the kernel's management interface") }
        let asked = clock.now
        do {
            return try await management.connectionRSSI(
                controller: index, address: device.address, type: .init(bluez: device.addressType))
        } catch {
            switch error {
            case .timeout, .status(0x08):
                throw BlueZError.timeout("\(device.adapterPath) did not answer the kernel's command: \(error)")
            case .status(let status)
            where !ManagementInterface.Failure.isKernelsRefusal(status)
                && asked.duration(to: clock.now) >= ManagementInterface.commandTimeoutSign:
                // Linux 6.1 answers a Read RSSI its controller left unanswered with a failure
                // (status 0x05, measured on the real lane) after its HCI command timeout (2 s),
                // not with `timeout` (issue 52: such probes went uncounted, and a controller
                // whose transport stalled was found by its silence 10 s later).
                throw BlueZError.timeout(
                    "\(device.adapterPath) did not answer the kernel's command: \(error) after \(asked.duration(to: clock.now))")
            default:
                throw BlueZError.notAvailable("\(error)")
            }
        }
    }

    /// Probes `adapter`'s controller through one of its links (the `turn`-th, so that turns
    /// visit them all), or, with no link, by asking it for its local clock: true when it
    /// answered, false when nothing was learned (no management interface, the link went).
    /// Throws ``BlueZError/timeout(_:)`` when it did not answer.
    public func probeController(_ adapter: BlueZAdapter, turn: Int) async throws -> Bool {
        let linked = await mirror.tree.linkedDevices(onAdapter: adapter.path)
        guard !linked.isEmpty else { return try await probeIdleController(adapter) }
        let device = linked[turn % linked.count]
        do {
            _ = try await probeLink(device.path)
            return true
        } catch BlueZError.notAvailable {
            return false  // the link went meanwhile, or no interface: nothing learned
        }
    }

    /// Asks a controller with no link for its local clock through the kernel's management
    /// interface (an adapter that only scans and connects is otherwise judged by nothing
    /// until a connect times out): true when it answered in time, false when nothing was
    /// learned. Throws ``BlueZError/timeout(_:)`` when the kernel's command to it timed out
    /// (the answer took the kernel's HCI command timeout; see
    /// ``ManagementInterface/readLocalClock(controller:timeout:)``).
    func probeIdleController(_ adapter: BlueZAdapter) async throws -> Bool {
        guard adapter.powered, let management, !managementUnusable.load(ordering: .relaxed),
            let index = Self.controllerIndex(adapter.path)
        else { return false }
        let answer: (status: UInt8, took: Duration)
        do {
            answer = try await management.readLocalClock(controller: index)
        } catch .timeout {
            throw BlueZError.timeout("\(adapter.path) did not answer the kernel's Read Clock")
        } catch {
            return false
        }
        if ManagementInterface.Failure.isKernelsRefusal(answer.status) { return false }
        if answer.status == ManagementInterface.Failure.commandTimedOut || answer.took >= ManagementInterface.commandTimeoutSign {
            throw BlueZError.timeout("\(adapter.path) did not answer the kernel's Read Clock within \(answer.took)")
        }
        return true
    }

    /// The controller index of an adapter path (`/org/bluez/hci3` → 3).
    static func controllerIndex(_ adapter: AdapterPath) -> UInt16? {
        let name = adapter.name
        guard name.hasPrefix("hci") else { return nil }
        return UInt16(name.dropFirst(3))
    }
}
