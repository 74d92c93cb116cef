import Synchronization

/// Which board's ``BoardLive`` belongs to which BlueZ device object, readable on the BlueZ
/// mirror: an advertisement of a known board is recorded there, without waking the fleet
/// or the board (unless the board waits for it).
final class DevicePathIndex: Sendable {
    private let entries = Mutex<[String: BoardLive]>([:])

    func replace(with entries: [String: BoardLive]) {
        self.entries.withLock { $0 = entries }
    }

    func live(at path: String) -> BoardLive? {
        entries.withLock { $0[path] }
    }
}
