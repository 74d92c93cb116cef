/// The calls waiting for a board to become ready: each resumes once it is, or is told why
/// it is not (or that it gave up).
struct BoardWaiters {
    private var waiting: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    private var lastID: UInt64 = 0

    var isEmpty: Bool { waiting.isEmpty }

    /// A number for the next waiter (taken before it waits, for its cancellation handler).
    mutating func newID() -> UInt64 {
        lastID &+= 1
        return lastID
    }

    mutating func add(_ id: UInt64, _ continuation: CheckedContinuation<Void, any Error>) {
        waiting[id] = continuation
    }

    /// The caller `id` gave up.
    mutating func cancel(_ id: UInt64) {
        waiting.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }

    /// The board is ready: everyone goes on.
    mutating func resume() {
        let current = waiting
        waiting = [:]
        for continuation in current.values { continuation.resume() }
    }

    /// The board will not be ready: everyone is told why.
    mutating func fail(_ error: FleetError) {
        let current = waiting
        waiting = [:]
        for continuation in current.values { continuation.resume(throwing: error) }
    }
}

extension FleetError {
    /// Why a board is not ready, as a call waiting for it is told: `lastSeen` is how long ago
    /// it was last heard, `lastFailure` how its last connect failed.
    init(board address: BoardAddress, _ code: FleetErrorCode, lastSeen: Duration?, lastFailure: ConnectErrorClass?) {
        let message =
            switch code {
            case .absent:
                "\(address) is not advertising (powered off or out of range?); \(Self.lastSeenText(lastSeen))."
            case .adapterOff: "The Bluetooth adapter is powered off or missing."
            case .bluezUnavailable: "BlueZ (bluetoothd) is not running."
            case .cancelled: "A disconnect of \(address) was requested meanwhile."
            case .notFound: "\(address) was forgotten."
            case .failed: "\(address) refused the connection (\(lastFailure?.rawValue ?? "permanent error"))."
            default: "\(address) could not be connected (\(code.rawValue))."
            }
        self.init(code, message)
    }

    /// `last seen 12 s ago`, for an absent board's answer.
    private static func lastSeenText(_ ago: Duration?) -> String {
        guard let ago else { return "not seen since the daemon started" }
        let seconds = Int(ago.components.seconds)
        let text =
            switch seconds {
            case ..<120: "\(seconds) s"
            case ..<7200: "\(seconds / 60) min"
            default: "\(seconds / 3600) h"
            }
        return "last seen \(text) ago"
    }
}
