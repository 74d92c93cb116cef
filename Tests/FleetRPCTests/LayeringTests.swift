import Foundation
import Testing

/// The layers drawn in Package.swift hold in the sources: each module imports only what its
/// layer may, and a public API carries only its own layer's types.
@Suite struct LayeringTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")

    /// Every `import` line of the module's Swift files, as (file, access, module).
    static func imports(of module: String) throws -> [(file: String, isPublic: Bool, module: String)] {
        let directory = sources.appendingPathComponent(module)
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(!files.isEmpty, "no sources in \(directory.path)")
        return try files.flatMap { file in
            try String(contentsOf: file, encoding: .utf8).split(separator: "\n").compactMap { line in
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count else { return nil }
                return (file.lastPathComponent, words.contains("public"), String(words[index + 1]))
            }
        }
    }

    @Test("JSONRPC, the generic protocol layer, knows nothing of the fleet")
    func jsonRPCIsGeneric() throws {
        for (file, _, module) in try Self.imports(of: "JSONRPC") {
            #expect(["Foundation", "FoundationEssentials"].contains(module), "\(file) imports \(module)")
        }
    }

    @Test("FleetRPC, the fleet's wire API, stands on JSONRPC and the fleet's vocabulary alone")
    func fleetRPCStandsOnJSONRPC() throws {
        for (file, _, module) in try Self.imports(of: "FleetRPC") {
            #expect(["FleetModel", "JSONRPC", "Foundation", "FoundationEssentials"].contains(module), "\(file) imports \(module)")
        }
    }

    @Test("FleetModel, the fleet's vocabulary under the core and the wire, stands on nothing of ours")
    func fleetModelStandsAlone() throws {
        for (file, _, module) in try Self.imports(of: "FleetModel") {
            #expect(["Glibc", "FoundationEssentials"].contains(module), "\(file) imports \(module)")
        }
    }

    @Test("Each word of the fleet's vocabulary is defined once, in FleetModel")
    func vocabularyIsDefinedOnce() throws {
        let words = [
            "BoardAddress", "Selection", "BoardPhase", "FleetErrorCode", "FleetError", "BoardOutcome", "FleetResult",
            "TemperatureReading", "SensorValue", "Celsius",
        ]
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path)
        for module in modules {
            let directory = Self.sources.appendingPathComponent(module)
            let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
            for file in files {
                let text = try String(contentsOf: file, encoding: .utf8)
                for word in words {
                    for kind in ["struct", "enum", "class", "typealias"] where text.contains("\(kind) \(word)") {
                        #expect(
                            module == "FleetModel" && text.contains("public \(kind) \(word)"),
                            "\(module)/\(file.lastPathComponent) defines \(kind) \(word)")
                    }
                }
            }
        }
    }

    @Test("The RPC server and the client never see BlueZ or D-Bus; FleetCore's API carries no BlueZ type")
    func upperLayersDoNotReachDown() throws {
        for module in ["FleetRPCServer", "FleetRPCClient", "BlectlCore", "blectl"] {
            for (file, _, imported) in try Self.imports(of: module) {
                #expect(!["BlueZ", "DBus", "CDBus"].contains(imported), "\(module)/\(file) imports \(imported)")
            }
        }
        for (file, isPublic, imported) in try Self.imports(of: "FleetCore") where imported == "BlueZ" {
            #expect(!isPublic, "FleetCore/\(file) puts BlueZ in its public API")
        }
    }
}
