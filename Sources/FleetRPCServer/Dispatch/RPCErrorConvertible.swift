import FleetRPC
public import JSONRPC

/// An error a handler may throw that knows which JSON-RPC error to answer with. Errors that
/// are neither this nor ``RPCError`` become `-32603` with no detail (the detail is logged).
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}
