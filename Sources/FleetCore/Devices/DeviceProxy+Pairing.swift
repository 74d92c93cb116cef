import BlueZ
import Synchronization

/// What a pairing shows its caller (``DeviceProxy/pair(_:passkey:pinCode:timeout:onPrompt:)``):
/// a passkey or PIN to type on the device, or the passkey both sides show, accepted.
public struct DevicePairingPrompt: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Type ``passkey`` on the device.
        case displayPasskey = "display-passkey"
        /// Both sides show ``passkey``; the pairing accepted it (it matched the passkey given,
        /// or none was given).
        case confirmPasskey = "confirm-passkey"
        /// Type ``pinCode`` on the device (BR/EDR).
        case displayPinCode = "display-pin-code"
    }
    public let kind: Kind
    public let passkey: UInt32?
    public let pinCode: String?
    /// Keys typed on the device so far (``Kind/displayPasskey``).
    public let entered: Int?
}

/// A device paired (``DeviceProxy/pair(_:passkey:pinCode:timeout:onPrompt:)``).
public struct DevicePairing: Sendable, Hashable {
    public let address: BoardAddress
    /// The adapter that holds the pairing (`hci0`).
    public let adapter: String
    /// Whether BlueZ keeps a bond (keys that outlive the link and bluetoothd's restarts).
    public let bonded: Bool
    /// True when it was paired before the call (nothing was done).
    public let alreadyPaired: Bool
}

extension DeviceProxy {
    /// Pairs with the linked device `address` through the adapter of its link, as bleak's
    /// BlueZ backend does (trusted, then `Device1.Pair`); BlueZ keeps the bond. The daemon's
    /// agent answers what the pairing asks: Just Works is accepted; a passkey the device shows
    /// is entered from `passkey` (refused without one); a passkey both sides show is accepted
    /// when it equals `passkey` (or when none was given, as Just Works would); a passkey or PIN
    /// to type on the device goes to `onPrompt`, as does a passkey accepted. A device paired
    /// already succeeds at once.
    ///
    /// Throws ``DeviceError``: `notConnected` without a link (BlueZ pairs over the link the
    /// fleet placed; `device.connect` first), `busy` while a pairing of the device is under
    /// way, `timeout`, and `failed` when the device or the agent refused.
    public func pair(
        _ address: BoardAddress, passkey: UInt32?, pinCode: String?, timeout: Duration,
        onPrompt: @escaping @Sendable (DevicePairingPrompt) -> Void
    ) async throws(DeviceError) -> DevicePairing {
        guard let device = Self.linkedDevice(address, in: await client.mirror.tree) else {
            throw DeviceError(.notConnected, "\(address) is not connected: connect it first (device.connect); BlueZ pairs over its link.")
        }
        let adapter = device.adapterPath.name
        // What the agent refused for want of a passkey or PIN, said when the pairing fails.
        let missing = Mutex<String?>(nil)
        let responder: PairingResponder = { request in
            switch request {
            case .passkey:
                guard let passkey else {
                    missing.withLock { $0 = "\(address) asks for the 6-digit passkey it shows: give it as passkey" }
                    return .reject
                }
                return .passkey(passkey)
            case .pinCode:
                guard let pinCode else {
                    missing.withLock { $0 = "\(address) asks for a PIN code: give it as pinCode" }
                    return .reject
                }
                return .pinCode(pinCode)
            case .confirmation(let shown):
                if let passkey, passkey != shown {
                    missing.withLock {
                        $0 = "\(address) shows passkey \(Self.sixDigits(shown)), not the \(Self.sixDigits(passkey)) given"
                    }
                    return .reject
                }
                onPrompt(DevicePairingPrompt(kind: .confirmPasskey, passkey: shown, pinCode: nil, entered: nil))
                return .accept
            case .authorization:
                return .accept
            case .displayPasskey(let shown, let entered):
                onPrompt(DevicePairingPrompt(kind: .displayPasskey, passkey: shown, pinCode: nil, entered: Int(entered)))
                return .accept
            case .displayPinCode(let pin):
                onPrompt(DevicePairingPrompt(kind: .displayPinCode, passkey: nil, pinCode: pin, entered: nil))
                return .accept
            }
        }
        let paired: Bool
        do {
            paired = try await client.pair(device, timeout: timeout, responder: responder)
        } catch {
            throw Self.pairingError(BlueZError(error), address: address, adapter: adapter, timeout: timeout, why: missing.withLock { $0 })
        }
        let state = await client.pairing(at: device.path)
        logger.info(
            paired ? "device paired" : "device was paired already",
            metadata: ["ble.address": "\(address)", "ble.adapter": "\(adapter)", "bonded": "\(state?.bonded ?? false)"])
        return DevicePairing(address: address, adapter: adapter, bonded: state?.bonded ?? paired, alreadyPaired: !paired)
    }

    static func sixDigits(_ passkey: UInt32) -> String {
        let digits = String(passkey)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    static func pairingError(
        _ error: BlueZError, address: BoardAddress, adapter: String, timeout: Duration, why: String?
    ) -> DeviceError {
        if let why { return DeviceError(.failed, "Pairing with \(address) failed: \(why).") }
        switch error {
        case .inProgress:
            return DeviceError(.busy, "A pairing of \(address) is under way already; wait for it to end.")
        case .timeout:
            return DeviceError(.timeout, "Pairing with \(address) did not finish within \(timeout); it was cancelled.")
        case .serviceUnavailable, .busDisconnected:
            return DeviceError(.bluezUnavailable, "BlueZ is not running, so \(address) cannot be paired (\(error.message)).")
        case .notReady:
            return DeviceError(.adapterOff, "\(adapter) is not powered, so \(address) cannot be paired.")
        case .objectVanished, .doesNotExist, .notConnected:
            return DeviceError(.notConnected, "\(address) disconnected while it was being paired.")
        case .authenticationFailed(let message):
            return DeviceError(.failed, "Pairing with \(address) failed: the device refused or did not answer (\(message)).")
        default:
            return DeviceError(.failed, "Pairing with \(address) failed: \(error.message).")
        }
    }

    /// Removes the device `address` from every adapter BlueZ knows it on, as bleak's BlueZ
    /// backend unpairs (`Adapter1.RemoveDevice`): its pairing and bond go, and with them its
    /// link (the leases on it end; a fleet board's link too). A fleet board stays a board: it
    /// connects again once the fleet hears it again (a new discovery of it, seconds on real
    /// BlueZ). Returns the adapters it was removed from. Throws `notFound` when no adapter
    /// knows it.
    public func unpair(_ address: BoardAddress) async throws(DeviceError) -> [String] {
        let devices = await client.mirror.tree.objects(implementing: BlueZInterfaces.device)
            .map { BlueZDevice(path: $0.path, properties: $0.properties) }
            .filter { BoardAddress($0.address) == address }
        guard !devices.isEmpty else {
            throw DeviceError(.notFound, "BlueZ knows no device \(address) on any adapter: there is no pairing to remove.")
        }
        var removed: [String] = []
        for device in devices {
            let adapter = device.adapterPath.name
            do {
                try await client.removeDevice(device)
                removed.append(adapter)
            } catch BlueZError.doesNotExist, BlueZError.objectVanished {
                // Gone meanwhile: nothing left to remove there.
            } catch {
                let bluez = BlueZError(error)
                if case .serviceUnavailable = bluez {
                    throw DeviceError(.bluezUnavailable, "BlueZ is not running, so \(address) cannot be unpaired (\(bluez.message)).")
                }
                throw DeviceError(.failed, "BlueZ did not remove \(address) from \(adapter): \(bluez.message).")
            }
        }
        guard !removed.isEmpty else {
            throw DeviceError(.notFound, "BlueZ knows no device \(address) on any adapter: there is no pairing to remove.")
        }
        context.slotsChanged.notify()
        logger.info("device unpaired (removed from BlueZ)", metadata: ["ble.address": "\(address)", "ble.adapter": "\(removed.joined(separator: ","))"])
        return removed
    }
}
