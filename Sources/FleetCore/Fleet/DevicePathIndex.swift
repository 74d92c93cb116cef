import BlueZ
import Synchronization

/// Which board belongs to which BlueZ device object, readable on the BlueZ mirror: an
/// advertisement of a known board is recorded in its ``BoardLive``, without waking the
/// fleet or the board (unless the board waits for it).
final class DevicePathIndex: Sendable {
    private let entries = Mutex<[DevicePath: Board]>([:])

    func replace(with entries: [DevicePath: Board]) {
        self.entries.withLock { $0 = entries }
    }

    func board(at path: DevicePath) -> Board? {
        entries.withLock { $0[path] }
    }
}
