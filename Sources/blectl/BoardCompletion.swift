import ArgumentParser
import FleetRPC
import FleetRPCClient

/// Shell completion of board selectors: asks the daemon for the boards' names, aliases and
/// addresses, and completes nothing when it cannot be reached.
enum BoardCompletion {
    static let kind = CompletionKind.custom { words, _, prefix in
        await names(words: words, prefix: prefix)
    }

    static func names(words: [String], prefix: String) async -> [String] {
        var option: String?
        if let index = words.firstIndex(of: "--socket"), index + 1 < words.count { option = words[index + 1] }
        if let word = words.first(where: { $0.hasPrefix("--socket=") }) { option = String(word.dropFirst(9)) }
        let path = GlobalOptions.socketPath(option: option, environment: Output.environment)
        guard let client = try? FleetRPCClient(socketPath: path),
            let list = try? await client.call(FleetMethods.BoardsList.self, .init(), timeout: .seconds(2))
        else { return [] }
        var candidates: [String] = []
        for board in list.boards {
            if let alias = board.alias, !alias.isEmpty { candidates.append(alias) }
            if !board.name.isEmpty { candidates.append(board.name) }
            candidates.append(board.address.rawValue)
        }
        var seen = Set<String>()
        return candidates.filter { $0.hasPrefix(prefix) && seen.insert($0).inserted }
    }
}
