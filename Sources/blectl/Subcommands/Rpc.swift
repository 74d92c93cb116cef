import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC
import FleetRPCClient

struct Rpc: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rpc",
        abstract: "Call any JSON-RPC method and print the reply's result (or error) as JSON.",
        discussion: "Example: blectl rpc temperature.read '{\"select\":\"all\",\"maxAgeMs\":0}'")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The method, e.g. daemon.status or rpc.discover.")
    var method: String

    @Argument(help: ArgumentHelp("The params: a JSON object or array.", valueName: "json-params"))
    var params: String?

    func validate() throws {
        guard !method.isEmpty else { throw ValidationError("METHOD must not be empty.") }
        _ = try parsedParams()
    }

    private func parsedParams() throws -> JSONValue? {
        guard let params else { return nil }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: params)
        } catch {
            throw ValidationError("JSON-PARAMS is not valid JSON: \(JSONCodec.describe(error)).")
        }
        switch value {
        case .object, .array: return value
        default: throw ValidationError("JSON-PARAMS must be a JSON object or array, not \(value.kindDescription).")
        }
    }

    func run() async throws {
        let session = try Session(options)
        let params = try parsedParams()
        do {
            let result = try await session.client.call(method, params: params, timeout: options.replyTimeout)
            Output.line(options.json ? JSONText.compact(result) : JSONText.pretty(result))
        } catch {
            var reply: (code: Int, message: String, data: JSONValue?)?
            switch error {
            case .rpcError(_, let code, let message, let data): reply = (code, message, data)
            case .permissionDenied(_, let message): reply = (RPCErrorCode.permissionDenied.rawValue, message, nil)
            default: reply = nil
            }
            if let (code, message, data) = reply {
                var object: [String: JSONValue] = ["code": .int(Int64(code)), "message": .string(message)]
                if let data { object["data"] = data }
                Output.line(JSONText.pretty(["error": .object(object)]))
            }
            throw Session.fail(error)
        }
    }
}
