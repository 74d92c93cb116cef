import ArgumentParser

struct Gatt: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gatt",
        abstract: "Read, write or listen to any GATT characteristic by UUID.",
        subcommands: [GattRead.self, GattWrite.self, GattNotify.self])

    @OptionGroup var options: GlobalOptions
}

/// The characteristic a `gatt` command addresses, and its boards.
struct GattTarget: ParsableArguments, BoardsAction {
    static let action = "read, write or follow"

    @Option(help: ArgumentHelp("Service UUID.", valueName: "uuid"))
    var service: String

    @Option(help: ArgumentHelp("Characteristic UUID.", valueName: "uuid"))
    var characteristic: String

    @OptionGroup var boards: SelectedBoards<GattTarget>

    func validate() throws {
        for (option, value) in [("--service", service), ("--characteristic", characteristic)] where !Self.isUUID(value) {
            throw ValidationError(
                "\(option) needs a UUID such as d888a9c3-f3cc-11ed-a05b-0242ac120003 or 2a6e, not \"\(value)\".")
        }
        _ = try boards.selection(example: "blectl gatt read nano-07 --service UUID --characteristic UUID")
    }

    /// A 128-bit UUID (8-4-4-4-12 hex digits) or a 16- or 32-bit short form.
    static func isUUID(_ text: String) -> Bool {
        let hex = Set("0123456789abcdefABCDEF")
        if text.count == 4 || text.count == 8 { return text.allSatisfy(hex.contains) }
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.allSatisfy(hex.contains) }
    }
}
