import BlueZ
import Logging

/// A board's link once BlueZ has resolved its services: its session (the profile's
/// characteristics found on it, the sensors followed), the switches put back as wanted.
extension Board {
    /// Services are resolved on `link`: its session looks up the profile's characteristics
    /// there (the profile the device offers now), and the machine is told.
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
        let prepared = await BoardSession.prepare(link: link, device: device, profile: profile, gatt: gatt)
        guard link == machine.link else { return }
        self.profile = profile
        session?.end()
        session = prepared
        let missing = prepared.missing
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
        session?.followSensors(adapter: linkAdapter, live: live, events: context.events, logger: logger)
        putSwitchesBack(link: machine.link)
    }

    /// The device of the board's link: the one on ``linkAdapter`` when BlueZ shows a link
    /// there, else (the link was adopted or moved) any of the board's devices with a link,
    /// which then becomes ``linkAdapter``.
    func linkedDevice() async -> BlueZDevice? {
        let tree = await context.client.mirror.tree
        guard let linked = devices.linked(in: tree, preferring: linkAdapter) else { return nil }
        if linked.adapterPath != linkAdapter { apply { machine, _ in machine.linkFound(through: linked.adapterPath) } }
        return linked
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
            guard let handle = session?.handle(named: item.name) else { continue }
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
