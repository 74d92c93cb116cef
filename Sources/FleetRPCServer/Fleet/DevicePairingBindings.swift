import FleetCore
import FleetRPC
import JSONRPC

/// Binds `device.pair` and `device.unpair`: the fleet's device proxy pairs through the
/// daemon's BlueZ agent, which answers from the call's params; what the device shows goes to
/// the calling connection as `device.pairing` notifications.
enum DevicePairingBindings {
    static func register(on dispatcher: inout JSONRPCDispatcher, fleet: Fleet) {
        dispatcher.register(FleetMethods.DevicePair.self) { params, context in
            let connection = context.connection
            let address = params.address
            do {
                let pairing = try await fleet.devices.pair(
                    address, passkey: params.passkey.map(UInt32.init), pinCode: params.pinCode,
                    timeout: .milliseconds(params.timeoutMs ?? 60_000)
                ) { prompt in
                    _ = connection.notify(
                        method: DevicePairingNotification.method,
                        params: DevicePairingNotification(
                            address: address.rawValue, kind: prompt.kind.rawValue, passkey: prompt.passkey.map(Int.init),
                            pinCode: prompt.pinCode, entered: prompt.entered, time: DeviceBindings.now()))
                }
                return DevicePairedResult(
                    address: pairing.address.rawValue, adapter: pairing.adapter, bonded: pairing.bonded,
                    alreadyPaired: pairing.alreadyPaired)
            } catch {
                throw rpcError(error)
            }
        }
        dispatcher.register(FleetMethods.DeviceUnpair.self) { params, _ in
            do {
                let adapters = try await fleet.devices.unpair(params.address)
                return DeviceUnpairedResult(address: params.address.rawValue, adapters: adapters)
            } catch {
                throw rpcError(error)
            }
        }
    }

    /// A pairing the device or the agent refused is `pairingFailed`; the rest as any device call's.
    static func rpcError(_ error: any Error) -> RPCError {
        guard let error = error as? DeviceError, error.code == .failed else { return DeviceBindings.rpcError(error) }
        return RPCError(.pairingFailed, error.message)
    }
}
