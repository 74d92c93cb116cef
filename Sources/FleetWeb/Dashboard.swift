import Foundation
import NIOCore

/// The dashboard's files (`Sources/FleetWeb/Dashboard`: `index.html`, its stylesheet and
/// scripts), built into the binary by the EmbedDashboard plugin and served as they are: the
/// page asks `/me` who is looking, nothing is rewritten per user.
enum Dashboard {
    struct File: Sendable {
        let contentType: String
        let bytes: ByteBuffer
    }

    /// Each file by the path it is served at (`/` is `index.html`).
    static let files: [String: File] = {
        var files: [String: File] = [:]
        for (name, base64) in DashboardFiles.base64 {
            guard let data = Data(base64Encoded: base64) else { preconditionFailure("\(name): the embedded copy is not base64") }
            let file = File(contentType: contentType(of: name), bytes: ByteBuffer(bytes: data))
            files["/" + name] = file
            if name == "index.html" { files["/"] = file }
        }
        return files
    }()

    static func contentType(of name: String) -> String {
        switch name.split(separator: ".").last {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        case "json": "application/json"
        default: "application/octet-stream"
        }
    }
}
