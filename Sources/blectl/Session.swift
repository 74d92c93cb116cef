import ArgumentParser
import BlectlCore
import FleetRPC
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
    func call(_ method: String, params: JSONValue? = nil, extraSeconds: Double = 0) async throws -> JSONValue {
        do {
            return try await client.call(method, params: params, timeout: timeout(extraSeconds))
        } catch {
            throw Session.fail(error)
        }
    }

    /// Calls `method` with typed params.
    func call(_ method: String, params: some Encodable, extraSeconds: Double = 0) async throws -> JSONValue {
        do {
            let value = try FleetRPCClient.encode(params, method: method)
            return try await client.call(method, params: value, timeout: timeout(extraSeconds))
        } catch {
            throw Session.fail(error)
        }
    }

    /// Decodes a result, or reports a malformed reply.
    func decode<Result: Decodable>(_ value: JSONValue, as type: Result.Type, method: String) throws -> Result {
        do {
            return try FleetRPCClient.decode(value, as: type, method: method)
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
    static func finish(_ totals: FleetTotals) throws {
        let status = ExitStatus.of(totals)
        if status != .ok { throw ExitCode(status.rawValue) }
    }
}
