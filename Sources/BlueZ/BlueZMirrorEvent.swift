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
