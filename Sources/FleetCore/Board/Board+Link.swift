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
            update { $0.linkMissing(link: link, now: $1) }
            return
        }
        let profile = context.profiles.profile(offering: device.uuids) ?? self.profile
        let prepared = await BoardSession.prepare(link: link, device: device, profile: profile, gatt: gatt)
        guard link == machine.link else { return }
        session?.end()
        session = prepared
        let missing = prepared.missing
        if !missing.isEmpty {
            logger.notice(
                "board lacks characteristics of its profile",
                metadata: ["ble.device": "\(device.path)", "profile": "\(profile.name)", "missing": "\(missing)"])
        }
        update { $0.characteristicsFound(link: link, profile: profile, now: $1) }
    }

    /// The board is usable: waiters go on, its sensors are followed, its LED put back.
    func becameReady() {
        // A link that came up is one a call waiting for a free link may look at again.
        context.slotsChanged.notify()
        logger.info("board ready", metadata: ["profile": "\(profile.name)"])
        waiters.resume()
        session?.followSensors(adapter: core.linkAdapter, live: live, events: context.events, logger: logger)
        putSwitchesBack(link: machine.link)
    }

    /// The device of the board's link (``BoardCore/linkedDevice(in:now:)``).
    func linkedDevice() async -> BlueZDevice? {
        let tree = await context.client.mirror.tree
        return update { $0.linkedDevice(in: tree, now: $1) }
    }

    /// Records a sensor's value (from a read, or a notification); nil when the bytes do not
    /// fit the sensor's format.
    @discardableResult
    func record(_ bytes: [UInt8], of sensor: BoardProfile.Characteristic) -> SensorReading? {
        live.record(bytes, of: sensor, events: context.events, address: address, logger: logger)
    }

    /// Puts the switches back as the board wants them (``BoardSwitches``) on a link that
    /// just became ready, each write the board's own work: its link is not given away before
    /// it is done.
    func putSwitchesBack(link: UInt64) {
        guard let session, session.link == link else { return }
        for (item, on) in switches.writes(for: profile) {
            guard let handle = session.handle(named: item.name) else { continue }
            update { core, _ in core.workStarted() }
            Task { await self.commands.putBack(item, on: on, to: handle, through: session) }
        }
    }

    /// A switch put back through `link` stands `on` now; or its write failed (`error`).
    func switchPutBack(_ item: BoardProfile.Characteristic, on: Bool, link: UInt64, error: (any Error)?) {
        defer { workEnded() }
        if let error {
            logger.warning("could not put the switch back", metadata: ["switch": "\(item.name)", "error": "\(error)"])
        } else {
            update { $0.switchPutBack(item.name, on: on, link: link, now: $1) }
        }
    }
}
