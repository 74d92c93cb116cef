import DBus

/// A change in the mirror of BlueZ's objects, delivered in the order BlueZ emitted it.
public enum BlueZMirrorEvent: Sendable {
    case interfacesAdded(path: String, interfaces: [String: BlueZObjectTree.Properties])
    case interfacesRemoved(path: String, interfaces: [String])
    case propertiesChanged(path: String, interface: String, changed: BlueZObjectTree.Properties, invalidated: [String])
    /// `org.bluez` left the bus: every object is gone (the mirror is empty).
    case serviceLost
    /// A complete snapshot was loaded (at start, or after `org.bluez` came back): re-read state.
    case serviceLoaded
}

extension BlueZMirrorEvent {
    /// The device this event only says advertised again, and its RSSI if it came with it;
    /// nil for any other event (a device that changed otherwise, or lost a property).
    public var advertisement: (path: DevicePath, rssi: Int16?)? {
        guard case .propertiesChanged(let path, BlueZInterfaces.device, let changed, let invalidated) = self,
            invalidated.isEmpty, changed.keys.allSatisfy({ BlueZDevice.Property.advertisement.contains(.init($0)) })
        else { return nil }
        return (DevicePath(path), BlueZDevice.usableRSSI(changed["RSSI"]?.int16))
    }
}
