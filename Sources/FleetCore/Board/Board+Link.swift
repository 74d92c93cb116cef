import BlueZ
import Logging

/// A board's link once BlueZ has resolved its services: the profile's characteristics found
/// on it, the sensors followed, the switches put back as wanted.
extension Board {
    /// Services are resolved on `link`: looks up the profile's characteristics there (the
    /// profile the device offers now), and tells the machine.
    func prepare(link: UInt64) async {
        guard link == machine.link else { return }
        guard let device = await linkedDevice() else {
            // Resolved, yet no device of ours holds the link (it went meanwhile): the machine
            // must learn it, or calls would wait for it forever.
            logger.debug("resolved without a link BlueZ shows; treating the link as lost")
            apply { $0.linkMissing(link: link, now: $1) }
            return
        }
        let profile = context.profiles.profile(offering: device.uuids) ?? self.profile
        let found = await context.client.mirror.characteristics(of: profile, on: device)
        guard link == machine.link else { return }
        self.profile = profile
        handles = found
        let missing = profile.characteristics.map(\.name).filter { found[$0] == nil }
        if !missing.isEmpty {
            logger.notice(
                "board lacks characteristics of its profile",
                metadata: ["ble.device": "\(device.path)", "profile": "\(profile.name)", "missing": "\(missing)"])
        }
        apply { $0.characteristicsFound(link: link, now: $1) }
    }

    /// The board is usable: waiters go on, its sensors are followed, its LED put back.
    func becameReady() {
        // A link that came up is one a call waiting for a free link may look at again.
        context.slotsChanged.notify()
        logger.info("board ready", metadata: ["profile": "\(profile.name)"])
        waiters.resume()
        let link = machine.link
        followSensors(of: profile, link: link)
        putSwitchesBack(link: link)
    }

    /// The device of the board's link: the one on ``linkAdapter`` when BlueZ shows a link
    /// there, else (the link was adopted or moved) any of the board's devices with a link,
    /// which then becomes ``linkAdapter``.
    func linkedDevice() async -> BlueZDevice? {
        let tree = await context.client.mirror.tree
        if let device, tree.hasLink(at: device.path) == true { return device }
        for (adapter, known) in devices {
            guard let current = tree.device(at: known.path), current.hasLink else { continue }
            devices[adapter] = current
            apply { machine, _ in machine.linkFound(through: adapter) }
            return current
        }
        return nil
    }

    /// Subscribes to every sensor of `profile` that notifies.
    func followSensors(of profile: BoardProfile, link: UInt64) {
        for sensor in profile.sensors where sensor.access.contains(.notify) {
            guard let handle = handles[sensor.name] else { continue }
            Task { await self.startNotifications(of: sensor, handle, link: link) }
        }
    }

    /// Subscribes to a sensor (``BoardGATT/follow(_:_:adapter:live:events:logger:)``).
    func startNotifications(
        of sensor: BoardProfile.Characteristic, _ characteristic: BlueZCharacteristic, link: UInt64
    ) async {
        do {
            let session = try await gatt.follow(
                sensor, characteristic, adapter: linkAdapter, live: live, events: context.events, logger: logger)
            guard link == machine.link else {
                session.cancel()
                return
            }
            notifySessions.append(session)
        } catch {
            guard link == machine.link, !(error is CancellationError) else { return }
            logger.debug("could not subscribe to \(sensor.name) notifications", metadata: ["error": "\(error)"])
        }
    }

    /// Records a sensor's value (from a read, or a notification); nil when the bytes do not
    /// fit the sensor's format.
    @discardableResult
    func record(_ bytes: [UInt8], of sensor: BoardProfile.Characteristic) -> SensorReading? {
        live.record(bytes, of: sensor, events: context.events, address: address, logger: logger)
    }

    /// Writes the LED state last asked for (the board may have rebooted, LED off) on a link
    /// that just became ready, and puts a switch an identify left mid-blink back (as wanted,
    /// or off).
    func putSwitchesBack(link: UInt64) {
        var writes: [(BoardProfile.Characteristic, Bool)] = []
        if desiredLED != .unknown, let led = profile.switch(named: BoardProfile.ledSwitch) {
            writes.append((led, desiredLED == .on))
        }
        if let name = leftMidBlink, !writes.contains(where: { $0.0.name == name }), let blinked = profile.switch(named: name) {
            writes.append((blinked, false))
        }
        for (item, on) in writes {
            guard let handle = handles[item.name] else { continue }
            // Work on the board like a call's, from now: its link is not given away before it is done.
            apply { machine, _ in machine.workStarted() }
            Task { await self.write(on, to: handle, of: item, link: link) }
        }
    }

    func write(_ on: Bool, to handle: BlueZCharacteristic, of item: BoardProfile.Characteristic, link: UInt64) async {
        defer { workEnded() }
        do {
            // Any failure is said as it is (below), none waited out as a link's loss.
            try await gatt.queue.acquire()
            defer { gatt.queue.release() }
            try await context.client.writeValue(item.encode(on: on), to: handle, type: .request)
            guard link == machine.link else { return }
            if leftMidBlink == item.name { leftMidBlink = nil }
            logger.info("switch put back", metadata: ["switch": "\(item.name)", "on": "\(on)"])
            guard item.name == BoardProfile.ledSwitch else { return }
            apply { machine, _ in machine.ledWritten(on, link: link) }
            context.events.publish(.ledApplied(address, on: on))
        } catch {
            logger.warning("could not put the switch back", metadata: ["switch": "\(item.name)", "error": "\(error)"])
        }
    }
}
