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
    static let deviceAddress = RPCParamDescriptor("address", .address, required: true, "The device's Bluetooth address.")
    static let handle = RPCParamDescriptor(
        "handle", .integer(minimum: 1, maximum: 65_535), required: true,
        "The attribute handle (as device.services lists it, and as bleak's BlueZ backend numbers it).")
    static let descriptorFlag = RPCParamDescriptor(
        "descriptor", .boolean, "The handle is a descriptor's (default: a characteristic's, else a descriptor's).")

    /// `devices.watch`.
    public enum DevicesWatch: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "devices.watch",
            summary:
                "Receive the advertisements of every device the adapters hear as \(DeviceAdvertisementNotification.method) notifications on this connection (first every device heard in the last 10 s, not every device BlueZ remembers), and \(DeviceRemovedNotification.method) when BlueZ drops one of them; a second call replaces the filter.",
            params: [
                RPCParamDescriptor(
                    "services", .array(of: .uuid), "Only devices that advertise one of these service UUIDs (default: every device)."),
            ],
            result: RPCResultDescriptor("watching", "Whether the connection receives advertisements.", schema: Schemas.watching),
            access: .read,
            errors: [.permissionDenied, .bluezUnavailable])

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var services: [String]?

            public init(services: [String]? = nil) {
                self.services = services
            }
        }
        public typealias Result = DevicesWatchResult
    }

    /// `devices.unwatch`.
    public enum DevicesUnwatch: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "devices.unwatch",
            summary: "Stop the advertisements devices.watch sends to this connection.",
            result: RPCResultDescriptor("watching", "false.", schema: Schemas.watching),
            access: .read,
            errors: [.permissionDenied])
        public typealias Result = DevicesWatchResult
    }

    /// `devices.connected`.
    public enum DevicesConnected: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "devices.connected",
            summary:
                "The devices connected to the adapters now (the fleet's links, clients' leases, other programs' links) whose services are resolved and that offer one of services, as BlueZ lists them: what bleak's BleakAdapter.get_connected_devices asks.",
            params: [
                RPCParamDescriptor(
                    "services", .array(of: .uuid), "Only devices that offer one of these service UUIDs (default: 1801, which almost every device has)."),
                RPCParamDescriptor(
                    "adapter", .string(), "Only this adapter's (hci0, or its address; none for an adapter the daemon lacks); default every adapter."),
            ],
            result: RPCResultDescriptor("devices", "The connected devices.", schema: Schemas.connectedDevices),
            access: .read,
            errors: [.permissionDenied, .bluezUnavailable, .invalidParams])

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var services: [String]?
            public var adapter: String?

            public init(services: [String]? = nil, adapter: String? = nil) {
                self.services = services
                self.adapter = adapter
            }
        }
        public typealias Result = DevicesConnectedResult
    }

    /// `device.connect`.
    public enum DeviceConnect: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "device.connect",
            summary:
                "Connect to any device the adapters hear and lease the link to this connection: the fleet never gives it away while leased; it ends with device.disconnect or when the connection closes. Waits for a connection slot (idle board links give way) until timeoutMs; never takes the slots each adapter keeps for the fleet (reserved-fleet-slots), and one user holds at most leases-per-user devices.",
            params: [
                deviceAddress,
                RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit, ms (default 20000)."),
            ],
            result: RPCResultDescriptor("link", "The device's link: adapter, MTU and services.", schema: Schemas.deviceServices),
            access: .write,
            errors: deviceErrors)

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var address: BoardAddress
            public var timeoutMs: Int?

            public init(address: BoardAddress, timeoutMs: Int? = nil) {
                self.address = address
                self.timeoutMs = timeoutMs
            }
        }
        public typealias Result = DeviceServicesResult
    }

    /// `device.disconnect`.
    public enum DeviceDisconnect: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "device.disconnect",
            summary:
                "End this connection's lease on a device; its link is released when no one else holds it (a fleet board's stays with the fleet).",
            params: [deviceAddress],
            result: RPCResultDescriptor("lease", "The address, and that this connection holds it no more.", schema: Schemas.deviceReleased),
            access: .write,
            errors: [.permissionDenied])

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var address: BoardAddress

            public init(address: BoardAddress) {
                self.address = address
            }
        }
        public typealias Result = DeviceReleasedResult
    }

    /// `device.services`.
    public enum DeviceServices: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "device.services",
            summary: "The GATT services of a connected device with handles, properties and descriptors, and its MTU.",
            params: [deviceAddress],
            result: RPCResultDescriptor("services", "The MTU and the services.", schema: Schemas.deviceServices),
            access: .read,
            errors: [.permissionDenied, .notConnected])

        public typealias Params = DeviceDisconnect.Params
        public typealias Result = DeviceServicesResult
    }

    /// `device.read`.
    public enum DeviceRead: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "device.read",
            summary: "Read a characteristic or descriptor of a connected device by handle (value as hex).",
            params: [
                deviceAddress, handle, descriptorFlag,
                RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit, ms (default 10000)."),
                RPCParamDescriptor(
                    "cached", .boolean,
                    "Return the value BlueZ holds (the last read or notified; empty if none) without asking the device (default false)."),
            ],
            result: RPCResultDescriptor("value", "The bytes read, as hex.", schema: Schemas.deviceValue),
            access: .read,
            errors: gattErrors)

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var address: BoardAddress
            public var handle: Int
            public var descriptor: Bool?
            public var timeoutMs: Int?
            public var cached: Bool?

            public init(address: BoardAddress, handle: Int, descriptor: Bool? = nil, timeoutMs: Int? = nil, cached: Bool? = nil) {
                self.address = address
                self.handle = handle
                self.descriptor = descriptor
                self.timeoutMs = timeoutMs
                self.cached = cached
            }
        }
        public typealias Result = DeviceValueResult
    }

    /// `device.write`.
    public enum DeviceWrite: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "device.write",
            summary: "Write bytes (hex) to a characteristic or descriptor of a connected device by handle.",
            params: [
                deviceAddress, handle, RPCParamDescriptor("value", .hex, required: true, "The bytes to write, as hex."),
                RPCParamDescriptor("withResponse", .boolean, "Write with response (default true)."), descriptorFlag,
                RPCParamDescriptor("timeoutMs", .integer(minimum: 1, maximum: 600_000), "Time limit, ms (default 10000)."),
            ],
            result: RPCResultDescriptor("written", "true.", schema: Schemas.deviceWritten),
            access: .write,
            errors: gattErrors)

        public struct Params: RPCMethodParams, Hashable {
            public var address: BoardAddress
            public var handle: Int
            public var value: [UInt8]
            public var withResponse: Bool?
            public var descriptor: Bool?
            public var timeoutMs: Int?

            public init(
                address: BoardAddress, handle: Int, value: [UInt8], withResponse: Bool? = nil, descriptor: Bool? = nil,
                timeoutMs: Int? = nil
            ) {
                self.address = address
                self.handle = handle
                self.value = value
                self.withResponse = withResponse
                self.descriptor = descriptor
                self.timeoutMs = timeoutMs
            }

            public init(checked params: RPCCheckedParams) throws(RPCError) {
                let address = try params.address("address")
                self.init(
                    address: address, handle: try params.int("handle"),
                    value: try params.typed("value", as: [UInt8].self) ?? [], withResponse: try params.optionalBool("withResponse"),
                    descriptor: try params.optionalBool("descriptor"), timeoutMs: try params.optionalInt("timeoutMs"))
            }

            enum CodingKeys: String, CodingKey { case address, handle, value, withResponse, descriptor, timeoutMs }

            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(address, forKey: .address)
                try container.encode(handle, forKey: .handle)
                try container.encode(HexBytes.encode(value), forKey: .value)
                try container.encodeIfPresent(withResponse, forKey: .withResponse)
                try container.encodeIfPresent(descriptor, forKey: .descriptor)
                try container.encodeIfPresent(timeoutMs, forKey: .timeoutMs)
            }
        }
        public typealias Result = DeviceWrittenResult
    }

    /// `device.notify`.
    public enum DeviceNotify: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "device.notify",
            summary:
                "Follow (on: true, the default) or stop following the notifications or indications of a characteristic of a connected device by handle; values arrive as \(DeviceValueNotification.method) notifications on this connection.",
            params: [deviceAddress, handle, RPCParamDescriptor("on", .boolean, "Follow (default true) or stop.")],
            result: RPCResultDescriptor("notifying", "Whether this connection follows it now.", schema: Schemas.deviceNotifying),
            access: .read,
            errors: gattErrors + [.limitReached])

        public struct Params: RPCMethodParams, Codable, Hashable {
            public var address: BoardAddress
            public var handle: Int
            public var on: Bool?

            public init(address: BoardAddress, handle: Int, on: Bool? = nil) {
                self.address = address
                self.handle = handle
                self.on = on
            }
        }
        public typealias Result = DeviceNotifyingResult
    }
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
            self.address = address
            self.addressType = addressType
            self.name = name
            self.adapter = adapter
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
        self.uuid = uuid
        self.handle = handle
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
        self.uuid = uuid
        self.handle = handle
        self.properties = properties
        self.descriptors = descriptors
    }
}

/// A GATT service of a connected device.
public struct GattServiceInfo: Sendable, Hashable, Codable {
    public var uuid: String
    public var handle: Int
    public var primary: Bool
    public var characteristics: [GattCharacteristicInfo]
    public init(uuid: String, handle: Int, primary: Bool, characteristics: [GattCharacteristicInfo]) {
        self.uuid = uuid
        self.handle = handle
        self.primary = primary
        self.characteristics = characteristics
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
        self.address = address
        self.name = name
        self.adapter = adapter
        self.mtu = mtu
        self.services = services
    }
}

public struct DeviceReleasedResult: Sendable, Hashable, Codable {
    public var address: String
    /// Whether this connection still holds it: false.
    public var leased: Bool
    public init(address: String, leased: Bool = false) {
        self.address = address
        self.leased = leased
    }
}

public struct DeviceValueResult: Sendable, Hashable, Codable {
    /// Lowercase hex.
    public var value: String
    public init(value: String) { self.value = value }
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
public struct DeviceAdvertisementNotification: Sendable, Hashable, Codable {
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
        self.address = address
        self.addressType = addressType
        self.name = name
        self.rssi = rssi
        self.txPower = txPower
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.serviceUuids = serviceUuids
        self.adapter = adapter
        self.connected = connected
        self.time = time
    }
}

/// `device.removed`: BlueZ dropped a device ``FleetMethods/DevicesWatch`` reported (it was not
/// heard for a while, was removed, or bluetoothd stopped).
public struct DeviceRemovedNotification: Sendable, Hashable, Codable {
    public static let method = "device.removed"
    public var address: String
    /// The adapter whose device it was (`hci0`).
    public var adapter: String
    public var time: String

    public init(address: String, adapter: String, time: String) {
        self.address = address
        self.adapter = adapter
        self.time = time
    }
}

/// `device.value`: a value a followed characteristic notified (``FleetMethods/DeviceNotify``).
public struct DeviceValueNotification: Sendable, Hashable, Codable {
    public static let method = "device.value"
    public var address: String
    public var handle: Int
    public var value: String
    public var time: String
    /// Values of this characteristic lost just before this one (the client read too slowly);
    /// absent when none were.
    public var dropped: Int?
    public init(address: String, handle: Int, value: String, time: String, dropped: Int? = nil) {
        self.address = address
        self.handle = handle
        self.value = value
        self.time = time
        self.dropped = dropped
    }
}

/// `device.disconnected`: a leased or followed device's link went down.
public struct DeviceDisconnectedNotification: Sendable, Hashable, Codable {
    public static let method = "device.disconnected"
    public var address: String
    public var reason: String
    public init(address: String, reason: String) {
        self.address = address
        self.reason = reason
    }
}

extension Schemas {
    static let connectedDevices: JSONValue = [
        "type": "object", "required": ["devices"],
        "properties": [
            "devices": [
                "type": "array",
                "items": [
                    "type": "object", "required": ["address", "adapter", "serviceUuids"],
                    "properties": [
                        "address": ["type": "string"], "addressType": ["type": "string"], "name": ["type": "string"],
                        "adapter": ["type": "string"], "serviceUuids": ["type": "array", "items": ["type": "string"]],
                    ],
                ],
            ]
        ],
    ]
    static let watching: JSONValue = [
        "type": "object", "required": ["watching"], "properties": ["watching": ["type": "boolean"]],
    ]
    static let deviceServices: JSONValue = [
        "type": "object", "required": ["address", "mtu", "services"],
        "properties": [
            "address": ["type": "string"], "name": ["type": "string"], "adapter": ["type": "string"],
            "mtu": ["type": "integer"],
            "services": [
                "type": "array",
                "items": [
                    "type": "object", "required": ["uuid", "handle", "primary", "characteristics"],
                    "properties": [
                        "uuid": ["type": "string"], "handle": ["type": "integer"], "primary": ["type": "boolean"],
                        "characteristics": [
                            "type": "array",
                            "items": [
                                "type": "object", "required": ["uuid", "handle", "properties", "descriptors"],
                                "properties": [
                                    "uuid": ["type": "string"], "handle": ["type": "integer"],
                                    "properties": ["type": "array", "items": ["type": "string"]],
                                    "descriptors": [
                                        "type": "array",
                                        "items": [
                                            "type": "object", "required": ["uuid", "handle"],
                                            "properties": ["uuid": ["type": "string"], "handle": ["type": "integer"]],
                                        ],
                                    ],
                                ],
                            ],
                        ],
                    ],
                ],
            ],
        ],
    ]
    static let deviceReleased: JSONValue = [
        "type": "object", "required": ["address", "leased"],
        "properties": ["address": ["type": "string"], "leased": ["type": "boolean"]],
    ]
    static let deviceValue: JSONValue = [
        "type": "object", "required": ["value"], "properties": ["value": ["type": "string", "pattern": "^([0-9a-f]{2})*$"]],
    ]
    static let deviceWritten: JSONValue = [
        "type": "object", "required": ["written"], "properties": ["written": ["type": "boolean"]],
    ]
    static let deviceNotifying: JSONValue = [
        "type": "object", "required": ["notifying"], "properties": ["notifying": ["type": "boolean"]],
    ]
}
