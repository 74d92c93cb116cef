import FleetSimulation
import Foundation
import Logging

/// The fleet's log as `--log` prints it: each line stamped with the simulation's time (seconds
/// since its start), so that a replay reads as the classroom went.
struct VirtualTimeLogHandler: LogHandler {
    let runtime: SimulationRuntime
    var logLevel: Logger.Level = .debug
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let seconds = Double(runtime.elapsed.components.seconds) + Double(runtime.elapsed.components.attoseconds) / 1e18
        let stamp = String(format: "%10.3f", seconds)
        FileHandle.standardError.write(Data("\(stamp) \(event.level) \(fields.isEmpty ? "" : fields + " ")\(event.message)\n".utf8))
    }
}
