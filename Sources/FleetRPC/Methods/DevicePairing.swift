public import JSONRPC

/// Pairing and bonding through the daemon: its BlueZ agent answers what a pairing asks,
/// from the call's params; what the device shows goes to the caller as notifications.
extension FleetMethods {
    /// `device.pair`.
    public enum DevicePair: RPCMethod {
        public static let descriptor = describe(
            "device.pair",
            "Pair with a connected device (and keep the bond: BlueZ stores it) through the adapter of its link, as bleak's BlueZ backend does: trusted, then paired by the daemon's agent. Just Works is accepted; a passkey the device shows is entered from passkey; a passkey both sides show is accepted when it equals passkey (or when none is given); a passkey or PIN to type on the device arrives as \(DevicePairingNotification.method) notifications on this connection. A paired device succeeds at once.",
            params: [
                "address": deviceAddress,
                "passkey": RPCParamNote(
                    "The 6-digit passkey the device shows, entered or compared when the pairing asks for it.",
                    .integer(minimum: 0, maximum: 999_999)),
                "pinCode": "The PIN code of a BR/EDR device that asks for one.", "timeoutMs": timeLimit(defaultMs: 60000),
            ],
            result: RPCResultDescriptor(
                "pairing", "The address, the adapter that holds the pairing, whether it is bonded and whether it was paired already."),
            access: .write,
            errors: [.permissionDenied, .notConnected, .pairingFailed, .busy, .timeout, .adapterUnavailable, .bluezUnavailable])

        public struct Params: RPCMethodParams, Hashable {
            public var address: BoardAddress
            public var passkey: Int?
            public var pinCode: String?
            public var timeoutMs: Int?

            public init(address: BoardAddress, passkey: Int? = nil, pinCode: String? = nil, timeoutMs: Int? = nil) {
                (self.address, self.passkey, self.pinCode, self.timeoutMs) = (address, passkey, pinCode, timeoutMs)
            }
        }
        public typealias Result = DevicePairedResult
    }

    /// `device.unpair`.
    public enum DeviceUnpair: DeviceMethod {
        public static let descriptor = deviceMethod(
            "device.unpair", "Remove a device from BlueZ on every adapter that knows it, as bleak's BlueZ backend unpairs (Adapter1.RemoveDevice): its pairing and bond go, its link drops (leases on it end with device.disconnected). A fleet board stays in the fleet and connects again once it is heard again.",
            result: RPCResultDescriptor("unpaired", "The address and the adapters it was removed from."), access: .write,
            errors: [.permissionDenied, .boardNotFound, .bluezUnavailable])
        public typealias Result = DeviceUnpairedResult
    }
}

/// `device.pair`'s result.
public struct DevicePairedResult: Sendable, Hashable, Codable {
    public var address: String
    /// The adapter that holds the pairing (`hci0`).
    public var adapter: String
    /// true.
    public var paired: Bool
    /// Whether BlueZ keeps a bond (keys that outlive the link and restarts).
    public var bonded: Bool
    /// Whether it was paired before the call (nothing was done).
    public var alreadyPaired: Bool
    public init(address: String, adapter: String, paired: Bool = true, bonded: Bool, alreadyPaired: Bool) {
        (self.address, self.adapter, self.paired, self.bonded, self.alreadyPaired) = (address, adapter, paired, bonded, alreadyPaired)
    }
}

/// `device.unpair`'s result.
public struct DeviceUnpairedResult: Sendable, Hashable, Codable {
    public var address: String
    /// The adapters BlueZ removed it from (`hci0`).
    public var adapters: [String]
    public init(address: String, adapters: [String]) {
        (self.address, self.adapters) = (address, adapters)
    }
}

/// `device.pairing`: what a pairing under way shows its caller (``FleetMethods/DevicePair``).
public struct DevicePairingNotification: FleetNotification, Hashable {
    public static let method = "device.pairing"
    public var address: String
    /// `display-passkey` (type it on the device), `confirm-passkey` (both sides show it; the
    /// pairing accepted it) or `display-pin-code` (type it on the device).
    public var kind: String
    /// The passkey, 0 to 999999 (shown with six digits).
    public var passkey: Int?
    public var pinCode: String?
    /// Keys typed on the device so far (`display-passkey`).
    public var entered: Int?
    public var time: String
    public init(address: String, kind: String, passkey: Int? = nil, pinCode: String? = nil, entered: Int? = nil, time: String) {
        (self.address, self.kind, self.passkey, self.pinCode, self.entered, self.time) = (address, kind, passkey, pinCode, entered, time)
    }
}
