/// Ends a subscription when the last copy of its stream (and iterators) is released.
final class DBusSubscriptionToken: Sendable {
    let engine: DBusEngine
    let id: UInt64

    init(engine: DBusEngine, id: UInt64) {
        self.engine = engine
        self.id = id
    }

    deinit { engine.removeSubscription(id: id) }
}
