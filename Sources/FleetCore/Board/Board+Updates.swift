import BlueZ

extension Board {
    /// BlueZ added one of the board's device objects (one per adapter that knows it) or
    /// changed its properties. `changed` names the properties that changed (all of them for
    /// a new object).
    func deviceUpdated(_ device: BlueZDevice, changed: Set<String>) {
        let adapter = device.adapterPath
        let advertised = devices.report(device, changed: changed)
        if let newName = device.name, newName != name { live.setNames(name: newName, alias: alias) }
        if advertised {
            _ = live.advertised(rssi: device.rssi.map(Int.init), adapter: adapter, force: true)
            apply { $0.advertisementSeen(now: $1) }
            // A board waiting for a slot, newly heard by an adapter with room: its turn.
            if machine.phase == .standby, context.tally.hasFreeSlot(onAdapter: adapter) {
                apply { $0.connectionRoomAppeared(now: $1) }
            }
        } else if let value = device.rssi {
            // Another property changed (a link up or down): the RSSI it shows is the last one
            // heard, kept for placement; it is no new sighting (the adapter may be off by now).
            live.keepRSSI(Int(value), adapter: adapter)
        }
        switch BoardDevices.link(of: device, changed: changed, linkAdapter: linkAdapter) {
        case nil:
            break
        case .up(let resolved):
            apply { $0.connectSucceeded(through: adapter, now: $1) }
            if resolved, linkAdapter == adapter { apply { $0.servicesResolved(now: $1) } }
        case .down:
            let usable = machine.isReady
            apply { $0.disconnected(now: $1) }
            // Said once; a link that fell as soon as it came up was told as a failed connect.
            if usable, machine.lastFailure == nil {
                logger.info("link lost", metadata: ["ble.adapter": "\(Fleet.adapterName(adapter))"])
            }
        case .stray:
            // A second link to the board (left by an earlier run, or made by someone else)
            // only takes a slot: the board is used through one.
            logger.info("closing a second link to the board", metadata: ["stray.adapter": "\(Fleet.adapterName(adapter))"])
            Task { [context] in try? await context.client.disconnect(device) }
        }
    }

    /// A board that enters standby (its connect found every slot it could use taken, or it
    /// gave its slot to another) while an adapter that was not considered then (it reported
    /// the board meanwhile, e.g. one just plugged in) has room: its turn, at once. The
    /// advertisement that told it was seen before standby, so it wakes nobody later.
    func wakeIfHeardWhereRoomIs() {
        let elsewhere = devices.reportedSincePlaced(besides: machine.lastLinkAdapter)
        guard let adapter = elsewhere.first(where: { context.tally.hasFreeSlot(onAdapter: $0) }) else { return }
        logger.debug("an adapter that heard it has room; connecting", metadata: ["ble.adapter": "\(Fleet.adapterName(adapter))"])
        apply { $0.connectionRoomAppeared(now: $1) }
    }

    /// BlueZ removed the board's device object on `adapter` (it expired, was removed, the
    /// adapter went, or BlueZ did). The board is gone when no adapter knows it any more; a
    /// link through that adapter is lost.
    func deviceRemoved(adapter: String) {
        guard devices.remove(adapter: adapter) else { return }
        live.forget(adapter: adapter)
        if devices.isEmpty {
            apply { $0.deviceVanished(now: $1) }
        } else if adapter == linkAdapter {
            apply { $0.disconnected(now: $1, withAdapter: true) }
        }
    }

    /// After BlueZ's objects were loaded afresh: forgets the devices of other adapters.
    func keepDevices(onAdapters present: Set<String>) {
        for adapter in devices.adapters(notIn: present) { deviceRemoved(adapter: adapter) }
    }

    /// BlueZ went away: every device object with it.
    func allDevicesRemoved() {
        guard devices.removeAll() else { return }
        live.forgetAllAdapters()
        apply { $0.deviceVanished(now: $1) }
    }

    /// An adapter the fleet used went (powered off, unplugged). A board whose link went
    /// with it is not gone: it reconnects through another adapter, at once where one knows
    /// it, else when one hears it.
    func adapterLost(_ path: String) {
        guard machine.lastLinkAdapter == path else { return }
        if linkAdapter == path { apply { $0.disconnected(now: $1, withAdapter: true) } }
        // A young link that fell with its adapter, BlueZ reporting the link down first, was
        // no failed connect either.
        apply { machine, _ in machine.linkLossForgiven() }
        let heardElsewhere = devices.known(besides: path)
        apply { $0.linkAdapterWent(heardElsewhere: heardElsewhere, now: $1) }
    }

    /// The adapter of the board's link stopped answering: nothing goes through the link any
    /// more. The board moves to another adapter that hears it, as if its adapter went, and
    /// the link is released: a recovery that resets the controller ends it anyway, but one
    /// that only restarts discovery (an adapter that hears nothing) does not, and a board
    /// with a link does not advertise: it would stay linked where the fleet no longer looks,
    /// called absent, for good (the simulation found that).
    func adapterStuck(_ path: String) {
        guard linkAdapter == path else { return }
        logger.info("moving off a stuck adapter", metadata: ["ble.adapter": "\(Fleet.adapterName(path))"])
        if let device {
            let client = context.client
            Task { try? await client.disconnect(device) }
        }
        adapterLost(path)
    }

    /// An adapter came (plugged in, powered on) while others were in use.
    func connectionRoomAppeared() {
        apply { $0.connectionRoomAppeared(now: $1) }
    }

    /// Whether any adapter the fleet uses is powered.
    func adapterPowered(_ powered: Bool) {
        apply { powered ? $0.adapterPoweredOn(now: $1) : $0.adapterPoweredOff(now: $1) }
    }

    /// The profiles changed (SIGHUP): the board takes the one its device now matches. A
    /// ready board looks up the new profile's characteristics and follows its sensors at
    /// once; any other takes it at its next connect.
    func profilesChanged() async {
        let tree = await context.client.mirror.tree
        let offered = devices.offered(in: tree)
        let next = context.profiles.profile(offering: offered) ?? .nano
        guard next != profile else { return }
        logger.info("board profile changed", metadata: ["profile": "\(next.name)", "profile.before": "\(profile.name)"])
        profile = next
        guard machine.isReady, let device else { return }
        let link = machine.link
        let prepared = await BoardSession.prepare(link: link, device: device, profile: next, gatt: gatt)
        guard link == machine.link, profile == next else { return }
        session?.end()
        session = prepared
        prepared.followSensors(adapter: linkAdapter, live: live, events: context.events, logger: logger)
    }

    /// The fleet wants the board connected (to receive its temperature notifications).
    func requestAutoConnect() {
        apply { $0.connectRequested(reason: .automatic, now: $1) }
    }
}
