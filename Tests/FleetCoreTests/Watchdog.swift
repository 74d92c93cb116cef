import Synchronization

/// Bounds a wait in a test: if not stopped within `limit`, runs `onTimeout` (which must
/// unblock whatever the test awaits) and remembers that it fired, so the test fails instead
/// of hanging.
final class Watchdog: Sendable {
    private let task: Task<Void, Never>

    init(limit: Duration = .seconds(5), onTimeout: @escaping @Sendable () -> Void) {
        let box = FlagBox()
        task = Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            box.set()
            onTimeout()
        }
        self.box = box
    }

    private let box: FlagBox

    /// Stops the watchdog; returns true when it had already fired (the wait was too long).
    func stop() -> Bool {
        task.cancel()
        return box.isSet
    }

    private final class FlagBox: Sendable {
        private let flag = Mutex(false)
        func set() { flag.withLock { $0 = true } }
        var isSet: Bool { flag.withLock { $0 } }
    }
}
