import Synchronization

/// Which board belongs to which BlueZ device object, readable on the BlueZ mirror: an
/// advertisement of a known board is recorded in its ``BoardLive``, without waking the
/// fleet or the board (unless the board waits for it).
final class DevicePathIndex: Sendable {
    private let entries = Mutex<[String: Board]>([:])

    func replace(with entries: [String: Board]) {
        self.entries.withLock { $0 = entries }
    }

    func board(at path: String) -> Board? {
        entries.withLock { $0[path] }
    }
}
