import Foundation
import PackagePlugin

/// Builds the dashboard's files (a target's `Dashboard/` folder: HTML, CSS, JavaScript, as an
/// editor and a linter see them) into the target as `DashboardFiles`, so that blefleet-web is
/// one binary that serves them with nothing to install beside it.
@main
struct EmbedDashboard: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let folder = target.directoryURL.appending(path: "Dashboard")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { !$0.hasPrefix(".") }
            .sorted()
        let inputs = names.map { folder.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "DashboardFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(target.name)'s dashboard (\(names.joined(separator: ", ")))",
                executable: try context.tool(named: "EmbedFiles").url,
                arguments: [output.path] + inputs.map(\.path),
                inputFiles: inputs, outputFiles: [output])
        ]
    }
}
