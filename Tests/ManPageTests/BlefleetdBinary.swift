import Foundation
import TestSupport

/// The `blefleetd` that `swift build --build-tests` puts next to the test bundle.
enum BlefleetdBinary {
    static func path() throws -> String { try builtExecutable("blefleetd") }

    /// Runs blefleetd with `arguments` and returns its exit status and standard error. Used
    /// only where the daemon exits at once (help, usage and start-up errors); killed after 20 s.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        try ChildProcess.runBlocking(
            try path(), arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new }, timeout: 20)
    }
}
