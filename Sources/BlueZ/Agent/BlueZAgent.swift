public import DBus
import Logging
import Synchronization

/// What bluetoothd asks the agent while a pairing the client started is under way
/// (`org.bluez.Agent1`, doc/org.bluez.Agent.rst).
public enum PairingRequest: Sendable, Hashable {
    /// `RequestPinCode`: a legacy (BR/EDR) PIN to send the device.
    case pinCode
    /// `RequestPasskey`: the 6-digit passkey the device shows, to be entered here.
    case passkey
    /// `RequestConfirmation`: both sides show this passkey; accept if they match.
    case confirmation(passkey: UInt32)
    /// `RequestAuthorization`: a Just Works pairing the device started, to be accepted.
    case authorization
    /// `DisplayPasskey`: type this passkey on the device (`entered` keys typed so far).
    case displayPasskey(UInt32, entered: UInt16)
    /// `DisplayPinCode`: type this PIN on the device.
    case displayPinCode(String)
}

/// The answer to a ``PairingRequest``.
public enum PairingAnswer: Sendable, Hashable {
    case pinCode(String)
    case passkey(UInt32)
    /// Yes (for a confirmation or an authorization), or "shown" (for a display).
    case accept
    /// No: bluetoothd ends the pairing (`org.bluez.Error.Rejected`).
    case reject
}

/// Answers what bluetoothd asks during one pairing.
public typealias PairingResponder = @Sendable (PairingRequest) async -> PairingAnswer

/// The client's `org.bluez.Agent1`: registered with `AgentManager1.RegisterAgent` and never
/// made the default agent (the desktop's agent, `bluetoothctl`'s, keeps that role and with it
/// every pairing others start). bluetoothd uses an agent that is not the default one for the
/// pairings its own client starts with `Device1.Pair`, which is all this one serves: each
/// request is answered by the responder of the pairing under way for that device; any other
/// (no pairing of ours under way, or not from bluetoothd) is rejected.
///
/// Registered on demand (``register(on:)`` before each pairing): bluetoothd forgets its agents
/// when it restarts, and answers `AlreadyExists` while it knows this one.
public final class BlueZAgent: Sendable {
    /// The agent's object path on the client's connection.
    public static let path = "/org/blefleet/agent"
    /// What the agent can do: show a passkey and have one entered (the richest set: the
    /// device's own capability then decides between Just Works, passkey entry and display).
    public static let capability = "KeyboardDisplay"
    static let interface = "org.bluez.Agent1"
    static let manager = "org.bluez.AgentManager1"
    static let rejected = DBusError(name: "org.bluez.Error.Rejected", message: "Rejected")

    private struct State {
        var exported = false
        /// The responder of each pairing under way, by device object path.
        var responders: [String: PairingResponder] = [:]
    }

    let connection: DBusConnection
    let logger: Logger
    private let state = Mutex(State())

    init(connection: DBusConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Exports the agent (once) and registers it with bluetoothd (again after bluetoothd
    /// restarted; `AlreadyExists` means it is registered).
    func register(on client: BlueZClient) async throws {
        let export = state.withLock { state -> Bool in
            defer { state.exported = true }
            return !state.exported
        }
        if export {
            do {
                try connection.exportObject(path: Self.path) { [weak self] call in
                    guard let self else { throw Self.rejected }
                    return try await self.handle(call)
                }
            } catch {
                state.withLock { $0.exported = false }
                throw BlueZError(error)
            }
        }
        do {
            try await client.call(
                "/org/bluez", Self.manager, "RegisterAgent", [.objectPath(Self.path), .string(Self.capability)],
                timeout: .seconds(5))
            logger.info("pairing agent registered with BlueZ (not the default agent)", metadata: ["dbus.path": "\(Self.path)"])
        } catch BlueZError.alreadyExists {
            // Registered already.
        }
    }

    /// Answers bluetoothd's requests about `devicePath` with `responder` until ``forget(_:)``;
    /// false when a pairing of that device is under way already.
    func expect(_ devicePath: String, responder: @escaping PairingResponder) -> Bool {
        state.withLock { state in
            guard state.responders[devicePath] == nil else { return false }
            state.responders[devicePath] = responder
            return true
        }
    }

    func forget(_ devicePath: String) {
        _ = state.withLock { $0.responders.removeValue(forKey: devicePath) }
    }

    private func handle(_ call: DBusMethodCall) async throws -> [DBusValue] {
        guard call.interface == nil || call.interface == Self.interface else {
            throw DBusError(name: DBusError.Name.unknownMethod, message: "No such interface \(call.interface ?? "")")
        }
        switch call.member {
        case "Release", "Cancel":
            // Release: bluetoothd dropped the agent (it registers again at the next pairing).
            // Cancel: the pairing's own call (Pair) fails and says why.
            return []
        default:
            break
        }
        // Only bluetoothd may ask: anyone else on the bus is refused.
        guard let owner = try? await connection.nameOwner(of: BlueZInterfaces.service), owner == call.sender else {
            logger.warning("an agent request not from bluetoothd was rejected", metadata: ["dbus.sender": "\(call.sender)"])
            throw Self.rejected
        }
        guard let device = call.arguments.first?.string,
            let responder = state.withLock({ $0.responders[device] })
        else {
            throw Self.rejected
        }
        let request: PairingRequest
        switch call.member {
        case "RequestPinCode": request = .pinCode
        case "RequestPasskey": request = .passkey
        case "RequestConfirmation":
            guard let passkey = call.arguments.dropFirst().first?.uint32 else { throw Self.rejected }
            request = .confirmation(passkey: passkey)
        case "RequestAuthorization": request = .authorization
        case "DisplayPasskey":
            guard let passkey = call.arguments.dropFirst().first?.uint32 else { throw Self.rejected }
            request = .displayPasskey(passkey, entered: call.arguments.dropFirst(2).first?.uint16 ?? 0)
        case "DisplayPinCode":
            guard let pin = call.arguments.dropFirst().first?.string else { throw Self.rejected }
            request = .displayPinCode(pin)
        default:
            // AuthorizeService and anything newer: not for a pairing of ours.
            throw Self.rejected
        }
        logger.debug("pairing request", metadata: ["dbus.path": "\(device)", "request": "\(call.member)"])
        switch (await responder(request), request) {
        case (.pinCode(let pin), .pinCode): return [.string(pin)]
        case (.passkey(let passkey), .passkey): return [.uint32(passkey)]
        case (.accept, .confirmation), (.accept, .authorization), (_, .displayPasskey), (_, .displayPinCode): return []
        default: throw Self.rejected
        }
    }
}
