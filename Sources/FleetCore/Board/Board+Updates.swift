import BlueZ

extension Board {
    /// BlueZ added the device or changed its properties. `changed` names the properties
    /// that changed (all of them for a new object).
    func deviceUpdated(_ device: BlueZDevice, changed: Set<String>) {
        let isNew = self.device == nil
        self.device = device
        if let newName = device.name, newName != name { name = newName }
        let advertised = isNew || changed.contains("RSSI") || changed.contains("ManufacturerData")
            || changed.contains("ServiceData") || changed.contains("TxPower")
        if advertised {
            _ = live.advertised(rssi: device.rssi.map(Int.init), force: true)
            apply { $0.advertisementSeen(now: $1) }
        } else if let value = device.rssi {
            live.setRSSI(Int(value))
        }
        // The link as BlueZ reports it: up while Connected or ServicesResolved (bluetoothd
        // may set only the latter), usable once resolved.
        if changed.contains("Connected") || changed.contains("ServicesResolved") {
            if !device.hasLink {
                apply { $0.disconnected(now: $1) }
            } else {
                apply { $0.connectSucceeded(now: $1) }
                if device.servicesResolved { apply { $0.servicesResolved(now: $1) } }
            }
        }
    }

    /// BlueZ removed the device object (it expired, was removed, or BlueZ went away).
    func deviceRemoved() {
        guard device != nil else { return }
        device = nil
        live.setRSSI(nil)
        apply { $0.deviceVanished(now: $1) }
    }

    func adapterPowered(_ powered: Bool) {
        apply { powered ? $0.adapterPoweredOn(now: $1) : $0.adapterPoweredOff(now: $1) }
    }

    /// The fleet wants the board connected (to receive its temperature notifications).
    func requestAutoConnect() {
        apply { $0.connectRequested(reason: .automatic, now: $1) }
    }
}
