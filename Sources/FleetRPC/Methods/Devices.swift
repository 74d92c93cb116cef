public import JSONRPC

/// Any device the adapters hear, not only the fleet's boards: what a GATT client (a bleak
/// script through `blefleet.bleak`) needs, over the socket. A `device.connect` is a lease on
/// the link for the calling connection.
extension FleetMethods {
    static let deviceErrors: [RPCErrorCode] = [
        .permissionDenied, .boardNotFound, .adapterUnavailable, .bluezUnavailable, .timeout, .notConnected, .busy,
        .limitReached,
    ]
    static let gattErrors: [RPCErrorCode] = [
        .permissionDenied, .notConnected, .gattError, .characteristicNotFound, .timeout, .bluezUnavailable,
    ]
    static let deviceAddress = RPCParamNote("The device's Bluetooth address.")
    static let handle = RPCParamNote(
        "The attribute handle (as device.services lists it, and as bleak's BlueZ backend numbers it).", .integer(minimum: 1, maximum: 65_535))
    static let descriptorFlag = RPCParamNote("The handle is a descriptor's (default: a characteristic's, else a descriptor's).")
    static func timeLimit(defaultMs: Int) -> RPCParamNote {
        RPCParamNote("Time limit, ms (default \(defaultMs)).", .integer(minimum: 1, maximum: 600_000))
    }

    /// `devices.watch`.
    public enum DevicesWatch: RPCMethod {
        public static let descriptor = describe(
            "devices.watch",
            "Receive the advertisements of every device the adapters hear as \(DeviceAdvertisementNotification.method) notifications on this connection (first every device heard in the last 10 s, not every device BlueZ remembers), and \(DeviceRemovedNotification.method) when BlueZ drops one of them; a second call replaces the filter.",
            params: ["services": RPCParamNote("Only devices that advertise one of these service UUIDs (default: every device).", .array(of: .uuid))],
            result: RPCResultDescriptor("watching", "Whether the connection receives advertisements."), access: .read,
            errors: [.permissionDenied, .bluezUnavailable])

        public struct Params: RPCMethodParams, Hashable {
            public var services: [String]?

            public init(services: [String]? = nil) { self.services = services }
        }
        public typealias Result = DevicesWatchResult
    }

    /// `devices.unwatch`.
    public enum DevicesUnwatch: RPCMethod {
        public static let descriptor = describe(
            "devices.unwatch", "Stop the advertisements devices.watch sends to this connection.",
            result: RPCResultDescriptor("watching", "false."), access: .read, errors: [.permissionDenied])
        public typealias Result = DevicesWatchResult
    }

    /// `devices.connected`.
    public enum DevicesConnected: RPCMethod {
        public static let descriptor = describe(
            "devices.connected",
            "The devices connected to the adapters now (the fleet's links, clients' leases, other programs' links) whose services are resolved and that offer one of services, as BlueZ lists them: what bleak's BleakAdapter.get_connected_devices asks.",
            params: [
                "services": RPCParamNote(
                    "Only devices that offer one of these service UUIDs (default: 1801, which almost every device has).", .array(of: .uuid)),
                "adapter": "Only this adapter's (hci0, or its address; none for an adapter the daemon lacks); default every adapter.",
            ],
            result: RPCResultDescriptor("devices", "The connected devices."), access: .read,
            errors: [.permissionDenied, .bluezUnavailable, .invalidParams])

        public struct Params: RPCMethodParams, Hashable {
            public var services: [String]?
            public var adapter: String?

            public init(services: [String]? = nil, adapter: String? = nil) { (self.services, self.adapter) = (services, adapter) }
        }
        public typealias Result = DevicesConnectedResult
    }

    /// `device.connect`.
    public enum DeviceConnect: RPCMethod {
        public static let descriptor = describe(
            "device.connect",
            "Connect to any device the adapters hear and lease the link to this connection: the fleet never gives it away while leased; it ends with device.disconnect or when the connection closes. Waits for a connection slot (idle board links give way) until timeoutMs; never takes the slots each adapter keeps for the fleet (reserved-fleet-slots), and one user holds at most leases-per-user devices.",
            params: ["address": deviceAddress, "timeoutMs": timeLimit(defaultMs: 20000)],
            result: RPCResultDescriptor("link", "The device's link: adapter, MTU and services."), access: .write,
            errors: deviceErrors)

        public struct Params: RPCMethodParams, Hashable {
            public var address: BoardAddress
            public var timeoutMs: Int?

            public init(address: BoardAddress, timeoutMs: Int? = nil) { (self.address, self.timeoutMs) = (address, timeoutMs) }
        }
        public typealias Result = DeviceServicesResult
    }

    /// `device.disconnect`.
    public enum DeviceDisconnect: DeviceMethod {
        public static let descriptor = deviceMethod(
            "device.disconnect", "End this connection's lease on a device; its link is released when no one else holds it (a fleet board's stays with the fleet).",
            result: RPCResultDescriptor("lease", "The address, and that this connection holds it no more."), access: .write, errors: [.permissionDenied])
        public typealias Result = DeviceReleasedResult
    }

    /// `device.services`.
    public enum DeviceServices: DeviceMethod {
        public static let descriptor = deviceMethod(
            "device.services", "The GATT services of a connected device with handles, properties and descriptors, and its MTU.",
            result: RPCResultDescriptor("services", "The MTU and the services."), access: .read, errors: [.permissionDenied, .notConnected])
        public typealias Result = DeviceServicesResult
    }

    /// `device.read`.
    public enum DeviceRead: RPCMethod {
        public static let descriptor = describe(
            "device.read", "Read a characteristic or descriptor of a connected device by handle (value as hex).",
            params: [
                "address": deviceAddress, "handle": handle, "descriptor": descriptorFlag, "timeoutMs": timeLimit(defaultMs: 10000),
                "cached": "Return the value BlueZ holds (the last read or notified; empty if none) without asking the device (default false).",
            ],
            result: RPCResultDescriptor("value", "The bytes read, as hex."), access: .read, errors: gattErrors)

        public struct Params: RPCMethodParams, Hashable {
            public var address: BoardAddress
            public var handle: Int
            public var descriptor: Bool?
            public var timeoutMs: Int?
            public var cached: Bool?

            public init(address: BoardAddress, handle: Int, descriptor: Bool? = nil, timeoutMs: Int? = nil, cached: Bool? = nil) {
                (self.address, self.handle, self.descriptor, self.timeoutMs, self.cached) = (address, handle, descriptor, timeoutMs, cached)
            }
        }
        public typealias Result = DeviceValueResult
    }

    /// `device.write`.
    public enum DeviceWrite: RPCMethod {
        public static let descriptor = describe(
            "device.write", "Write bytes (hex) to a characteristic or descriptor of a connected device by handle.",
            params: [
                "address": deviceAddress, "handle": handle, "value": "The bytes to write, as hex.",
                "withResponse": "Write with response (default true).", "descriptor": descriptorFlag,
                "timeoutMs": timeLimit(defaultMs: 10000),
            ],
            result: RPCResultDescriptor("written", "true."), access: .write, errors: gattErrors)

        public struct Params: RPCMethodParams, Hashable {
            public var address: BoardAddress
            public var handle: Int
            /// The bytes to write (hex on the wire).
            @Hex public var value: [UInt8]
            public var withResponse: Bool?
            public var descriptor: Bool?
            public var timeoutMs: Int?

            public init(
                address: BoardAddress, handle: Int, value: [UInt8], withResponse: Bool? = nil, descriptor: Bool? = nil,
                timeoutMs: Int? = nil
            ) {
                (self.address, self.handle) = (address, handle)
                self.value = value
                (self.withResponse, self.descriptor, self.timeoutMs) = (withResponse, descriptor, timeoutMs)
            }
        }
        public typealias Result = DeviceWrittenResult
    }

    /// `device.notify`.
    public enum DeviceNotify: RPCMethod {
        public static let descriptor = describe(
            "device.notify",
            "Follow (on: true, the default) or stop following the notifications or indications of a characteristic of a connected device by handle; values arrive as \(DeviceValueNotification.method) notifications on this connection.",
            params: ["address": deviceAddress, "handle": handle, "on": "Follow (default true) or stop."],
            result: RPCResultDescriptor("notifying", "Whether this connection follows it now."), access: .read,
            errors: gattErrors + [.limitReached])

        public struct Params: RPCMethodParams, Hashable {
            public var address: BoardAddress
            public var handle: Int
            public var on: Bool?

            public init(address: BoardAddress, handle: Int, on: Bool? = nil) { (self.address, self.handle, self.on) = (address, handle, on) }
        }
        public typealias Result = DeviceNotifyingResult
    }
}

/// A method on one device, named by its address (``DeviceParams``).
public protocol DeviceMethod: RPCMethod where Params == DeviceParams {}

extension DeviceMethod {
    static func deviceMethod(
        _ name: String, _ summary: String, result: RPCResultDescriptor, access: RPCAccess, errors: [RPCErrorCode]
    ) -> RPCMethodDescriptor {
        describe(name, summary, params: ["address": FleetMethods.deviceAddress], result: result, access: access, errors: errors)
    }
}

/// Params of a method on one device: its address.
public struct DeviceParams: RPCMethodParams, Hashable {
    public var address: BoardAddress

    public init(address: BoardAddress) { self.address = address }
}

/// `devices.connected`'s result.
public struct DevicesConnectedResult: Sendable, Hashable, Codable {
    public struct Device: Sendable, Hashable, Codable {
        public var address: String
        /// `public` or `random`.
        public var addressType: String?
        /// The device's name, if it has one (not BlueZ's made-up alias).
        public var name: String?
        /// The adapter of the link (`hci0`).
        public var adapter: String
        /// The services it offers, 128-bit, lowercase.
        public var serviceUuids: [String]

        public init(address: String, addressType: String?, name: String?, adapter: String, serviceUuids: [String]) {
            (self.address, self.addressType, self.name, self.adapter) = (address, addressType, name, adapter)
            self.serviceUuids = serviceUuids
        }
    }
    public var devices: [Device]
    public init(devices: [Device]) { self.devices = devices }
}

public struct DevicesWatchResult: Sendable, Hashable, Codable {
    public var watching: Bool
    public init(watching: Bool) { self.watching = watching }
}

/// A descriptor in ``GattServiceInfo``.
public struct GattDescriptorInfo: Sendable, Hashable, Codable {
    public var uuid: String
    public var handle: Int
    public init(uuid: String, handle: Int) {
        (self.uuid, self.handle) = (uuid, handle)
    }
}

/// A characteristic in ``GattServiceInfo``.
public struct GattCharacteristicInfo: Sendable, Hashable, Codable {
    public var uuid: String
    public var handle: Int
    /// BlueZ's flags: `read`, `write`, `write-without-response`, `notify`, `indicate`, ….
    public var properties: [String]
    public var descriptors: [GattDescriptorInfo]
    public init(uuid: String, handle: Int, properties: [String], descriptors: [GattDescriptorInfo]) {
        (self.uuid, self.handle, self.properties, self.descriptors) = (uuid, handle, properties, descriptors)
    }
}

/// A GATT service of a connected device.
public struct GattServiceInfo: Sendable, Hashable, Codable {
    public var uuid: String
    public var handle: Int
    public var primary: Bool
    public var characteristics: [GattCharacteristicInfo]
    public init(uuid: String, handle: Int, primary: Bool, characteristics: [GattCharacteristicInfo]) {
        (self.uuid, self.handle, self.primary, self.characteristics) = (uuid, handle, primary, characteristics)
    }
}

/// `device.connect`'s and `device.services`' result.
public struct DeviceServicesResult: Sendable, Hashable, Codable {
    public var address: String
    /// The device's name (`device.connect`).
    public var name: String?
    /// The adapter of the link (`device.connect`).
    public var adapter: String?
    public var mtu: Int
    public var services: [GattServiceInfo]
    public init(address: String, name: String? = nil, adapter: String? = nil, mtu: Int, services: [GattServiceInfo]) {
        (self.address, self.name, self.adapter, self.mtu, self.services) = (address, name, adapter, mtu, services)
    }
}

public struct DeviceReleasedResult: Sendable, Hashable, Codable {
    public var address: String
    /// Whether this connection still holds it: false.
    public var leased: Bool
    public init(address: String, leased: Bool = false) {
        (self.address, self.leased) = (address, leased)
    }
}

public struct DeviceValueResult: Sendable, Hashable, Codable {
    /// The bytes (lowercase hex on the wire).
    @Hex public var value: [UInt8]
    public init(value: [UInt8]) { self.value = value }
}

public struct DeviceWrittenResult: Sendable, Hashable, Codable {
    public var written: Bool
    public init(written: Bool = true) { self.written = written }
}

public struct DeviceNotifyingResult: Sendable, Hashable, Codable {
    public var notifying: Bool
    public init(notifying: Bool) { self.notifying = notifying }
}

/// `device.advertisement`: what a device advertised (``FleetMethods/DevicesWatch``).
public struct DeviceAdvertisementNotification: FleetNotification, Hashable {
    public static let method = "device.advertisement"
    public var address: String
    /// `public` or `random`.
    public var addressType: String?
    public var name: String?
    public var rssi: Int?
    public var txPower: Int?
    /// Company identifier (decimal) → bytes as hex.
    public var manufacturerData: [String: String]
    /// Service UUID (128-bit, lowercase) → bytes as hex.
    public var serviceData: [String: String]
    /// 128-bit, lowercase.
    public var serviceUuids: [String]
    public var adapter: String
    public var connected: Bool
    public var time: String

    public init(
        address: String, addressType: String?, name: String?, rssi: Int?, txPower: Int?, manufacturerData: [String: String],
        serviceData: [String: String], serviceUuids: [String], adapter: String, connected: Bool, time: String
    ) {
        (self.address, self.addressType, self.name, self.rssi, self.txPower) = (address, addressType, name, rssi, txPower)
        (self.manufacturerData, self.serviceData, self.serviceUuids, self.adapter) = (manufacturerData, serviceData, serviceUuids, adapter)
        (self.connected, self.time) = (connected, time)
    }
}

/// `device.removed`: BlueZ dropped a device ``FleetMethods/DevicesWatch`` reported (it was not
/// heard for a while, was removed, or bluetoothd stopped).
public struct DeviceRemovedNotification: FleetNotification, Hashable {
    public static let method = "device.removed"
    public var address: String
    /// The adapter whose device it was (`hci0`).
    public var adapter: String
    public var time: String

    public init(address: String, adapter: String, time: String) {
        (self.address, self.adapter, self.time) = (address, adapter, time)
    }
}

/// `device.value`: a value a followed characteristic notified (``FleetMethods/DeviceNotify``).
public struct DeviceValueNotification: FleetNotification, Hashable {
    public static let method = "device.value"
    public var address: String
    public var handle: Int
    public var value: String
    public var time: String
    /// Values of this characteristic lost just before this one (the client read too slowly);
    /// absent when none were.
    public var dropped: Int?
    public init(address: String, handle: Int, value: String, time: String, dropped: Int? = nil) {
        (self.address, self.handle, self.value, self.time, self.dropped) = (address, handle, value, time, dropped)
    }
}

/// `device.disconnected`: a leased or followed device's link went down.
public struct DeviceDisconnectedNotification: FleetNotification, Hashable {
    public static let method = "device.disconnected"
    public var address: String
    public var reason: String
    public init(address: String, reason: String) {
        (self.address, self.reason) = (address, reason)
    }
}
