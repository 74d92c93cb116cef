import ArgumentParser
import BlectlCore
import FleetRPC
import JSONRPC
import FleetRPCClient

/// A connection to the daemon for one command, turning every client error into the
/// diagnosis on standard error and blectl's exit status.
struct Session {
    let options: GlobalOptions
    let client: FleetRPCClient

    /// Connects, or prints why not and throws the exit status (69 or 77).
    init(_ options: GlobalOptions) throws {
        self.options = options
        do {
            client = try FleetRPCClient(socketPath: options.socketPath)
        } catch {
            throw Session.fail(error)
        }
    }

    /// Calls `method`; `extraSeconds` is added to the reply timeout (e.g. a scan's duration).
    func call<Method: RPCMethod>(
        _ method: Method.Type, _ params: Method.Params, extraSeconds: Double = 0
    ) async throws -> FleetRPCReply<Method.Result> {
        do {
            return try await client.reply(method, params, timeout: timeout(extraSeconds))
        } catch {
            throw Session.fail(error)
        }
    }

    /// Calls `method`, which takes no params.
    func call<Method: RPCMethod>(_ method: Method.Type) async throws -> FleetRPCReply<Method.Result>
    where Method.Params == RPCNoParams {
        try await call(method, RPCNoParams())
    }

    /// The typed result of a reply, or the diagnosis of a malformed one.
    func result<Result>(_ reply: FleetRPCReply<Result>) throws -> Result {
        do {
            return try reply.result()
        } catch {
            throw Session.fail(error)
        }
    }

    /// The result of a reply as it came (for `--json`).
    func json<Result>(_ reply: FleetRPCReply<Result>) throws -> JSONValue {
        do {
            return try reply.json()
        } catch {
            throw Session.fail(error)
        }
    }

    private func timeout(_ extraSeconds: Double) -> Duration {
        .milliseconds(Int64((options.timeout + extraSeconds) * 1000))
    }

    /// Prints the diagnosis of `error` and returns the exit status to throw.
    static func fail(_ error: FleetRPCClientError) -> ExitCode {
        let diagnosis = Diagnosis(error)
        for line in diagnosis.lines { Output.error(line) }
        return ExitCode(diagnosis.status.rawValue)
    }

    /// The exit status of a fleet-wide result (1 when any board failed).
    static func finish<Value>(_ result: FleetResult<Value>) throws {
        let status = ExitStatus.of(result)
        if status != .ok { throw ExitCode(status.rawValue) }
    }
}
