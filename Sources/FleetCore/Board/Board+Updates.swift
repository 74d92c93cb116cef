import BlueZ

/// What BlueZ and the fleet tell the board (``BoardCore`` decides what it means).
extension Board {
    /// BlueZ added one of the board's device objects or changed its properties (`changed`;
    /// all of them for a new object).
    func deviceUpdated(_ device: BlueZDevice, changed: Set<BlueZDevice.Property>) {
        // The core records the sighting (``BoardDevices/report(_:changed:now:)``) before its
        // effects are performed: a call failed now is told when it was last heard.
        update { $0.deviceUpdated(device, changed: changed, now: $1) }
    }

    /// BlueZ removed the board's device object on `adapter`.
    func deviceRemoved(adapter: AdapterPath) {
        update { $0.deviceRemoved(adapter: adapter, now: $1) }
    }

    /// After BlueZ's objects were loaded afresh: forgets the devices of other adapters.
    func keepDevices(onAdapters present: Set<AdapterPath>) {
        for adapter in core.devices.adapters(notIn: present) { deviceRemoved(adapter: adapter) }
    }

    /// BlueZ went away: every device object with it.
    func allDevicesRemoved() {
        update { $0.allDevicesRemoved(now: $1) }
    }

    /// The fleet wants the board connected (to receive its temperature notifications).
    func requestAutoConnect() {
        update { $0.connectRequested(reason: .automatic, now: $1) }
    }

    /// The profiles changed (SIGHUP): the board takes the one its device now matches. A
    /// ready board looks up the new profile's characteristics and follows its sensors at
    /// once; any other takes it at its next connect.
    func profilesChanged() async {
        let tree = await context.client.mirror.tree
        let next = context.profiles.profile(offering: core.devices.offered(in: tree)) ?? .nano
        guard next != profile else { return }
        logger.info("board profile changed", metadata: ["profile": "\(next.name)", "profile.before": "\(profile.name)"])
        update { core, _ in core.profileChanged(to: next) }
        guard machine.isReady, let device = core.device else { return }
        let link = machine.link
        let prepared = await BoardSession.prepare(link: link, device: device, profile: next, gatt: gatt)
        guard link == machine.link, profile == next else { return }
        session?.end()
        session = prepared
        prepared.followSensors(adapter: core.linkAdapter, live: live, events: context.events, logger: logger)
    }
}
