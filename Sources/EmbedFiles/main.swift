// `EmbedFiles OUTPUT FILE...`: writes OUTPUT, a Swift file declaring `DashboardFiles.base64`,
// each FILE's name → its bytes as base64 (the EmbedDashboard build plugin runs it).
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: EmbedFiles OUTPUT FILE...\n".utf8))
    exit(64)
}
var entries: [String] = []
for path in arguments.dropFirst() {
    let url = URL(fileURLWithPath: path)
    let bytes = try Data(contentsOf: url)
    let name = url.lastPathComponent
    guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }) else {
        FileHandle.standardError.write(Data("EmbedFiles: \(name): a file to embed is named with letters, digits, . - _ only\n".utf8))
        exit(65)
    }
    entries.append("        \"\(name)\": \"\(bytes.base64EncodedString())\",")
}
let source = """
    // Generated from Sources/FleetWeb/Dashboard by the EmbedDashboard plugin: edit those files.
    enum DashboardFiles {
        /// Each file's name → its bytes, base64.
        static let base64: [String: String] = [
    \(entries.isEmpty ? "        :" : entries.joined(separator: "\n"))
        ]
    }

    """
try source.write(toFile: output, atomically: true, encoding: .utf8)
