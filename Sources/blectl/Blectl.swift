import ArgumentParser
import BlectlCore
import FleetRPC

#if canImport(Glibc)
import Glibc
#endif

/// `blectl`: the command line client of blefleetd.
@main
struct Blectl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blectl",
        abstract: "Control a fleet of BLE boards through blefleetd.",
        discussion: """
            SELECTOR is a board's address, name, alias, a glob such as 'lab-*' (quote it), or 'all'.
            Exit status: 0 all ok, 1 some boards or the call failed, 2 usage error, \
            69 blefleetd unreachable, 77 permission denied.
            """,
        version: BlefleetVersion.current,
        subcommands: [
            Status.self, Boards.self, Scan.self, Led.self, Temp.self, Read.self, Switch.self, Watch.self, Connect.self,
            Disconnect.self, Alias.self, Identify.self, Forget.self, History.self, Gatt.self, Rpc.self,
        ]
    )

    @OptionGroup var options: GlobalOptions

    /// Runs the command; usage errors exit with 2 (not ArgumentParser's 64).
    static func main() async {
        do {
            var command = try await asyncParseAsRoot(nil)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                Output.error(fullMessage(for: error))
                Output.flush()
                Glibc.exit(ExitStatus.usage.rawValue)
            }
            Output.flush()
            exit(withError: error)
        }
        Output.flush()
    }
}
