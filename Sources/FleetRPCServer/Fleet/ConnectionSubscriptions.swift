import FleetCore
import Synchronization

/// What each connection follows: characteristics of boards (`gatt.notify`) and of devices
/// (`device.notify`). One subscription per characteristic a connection follows, however
/// often it asks (a second ask answers with the one it has); at most ``limit`` per
/// connection; each ended when its connection closes.
final class ConnectionSubscriptions: Sendable {
    /// One characteristic followed.
    enum Key: Hashable, Sendable {
        case board(BoardAddress, service: GattUUID, characteristic: GattUUID)
        case device(BoardAddress, handle: Int)
    }

    /// What ``claim(_:on:)`` found.
    struct Claim: Equatable {
        /// Not followed yet: the caller subscribes, then ``install(_:on:cancel:)``.
        var new: [Key]
        /// Followed already on this connection: nothing to do.
        var existing: [Key]
    }

    /// Past the bound: the connection follows `held`, and `asked` more would pass `limit`.
    struct Refusal: Error, Equatable {
        var held: Int
        var asked: Int
        var limit: Int

        var message: String {
            "This connection follows \(held) characteristic\(held == 1 ? "" : "s") already; \(asked) more would pass the"
                + " \(limit) one connection may follow (subscriptions-per-connection): stop following one first."
        }
    }

    private struct Entry {
        /// Ends the subscription; nil while it is being set up.
        var cancel: (@Sendable () -> Void)?
    }

    /// The most subscriptions one connection may have.
    let limit: Int
    private let connections = Mutex<[UInt64: [Key: Entry]]>([:])

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// How many subscriptions `connection` has (or is setting up).
    func count(on connection: RPCConnection) -> Int {
        connections.withLock { $0[connection.id]?.count ?? 0 }
    }

    /// Claims `keys` on `connection`: the new ones are held (counted) until installed or
    /// removed. All or nothing: throws when the new ones would pass the bound.
    func claim(_ keys: [Key], on connection: RPCConnection) throws(Refusal) -> Claim {
        let (result, first): (Result<Claim, Refusal>, Bool) = connections.withLock { connections in
            let first = connections[connection.id] == nil
            let held = connections[connection.id] ?? [:]
            var claim = Claim(new: [], existing: [])
            for key in keys {
                if held[key] != nil {
                    if !claim.existing.contains(key) { claim.existing.append(key) }
                } else if !claim.new.contains(key) {
                    claim.new.append(key)
                }
            }
            guard held.count + claim.new.count <= limit else {
                return (.failure(Refusal(held: held.count, asked: claim.new.count, limit: limit)), false)
            }
            guard !connection.isClosed else { return (.success(Claim(new: [], existing: claim.existing)), false) }
            var entries = held
            for key in claim.new { entries[key] = Entry(cancel: nil) }
            connections[connection.id] = entries
            return (.success(claim), first)
        }
        if first {
            connection.onClose { [weak self] in
                let ended = self?.connections.withLock { $0.removeValue(forKey: connection.id) } ?? [:]
                for entry in ended.values { entry.cancel?() }
            }
        }
        return try result.get()
    }

    /// The subscription of `key` is set up: `cancel` ends it. False, and `cancel` run, when
    /// the claim is gone meanwhile (the connection closed, or the subscription was stopped).
    @discardableResult
    func install(_ key: Key, on connection: RPCConnection, cancel: @escaping @Sendable () -> Void) -> Bool {
        let kept = connections.withLock { connections -> Bool in
            guard connections[connection.id]?[key] != nil else { return false }
            connections[connection.id]?[key] = Entry(cancel: cancel)
            return true
        }
        if !kept { cancel() }
        return kept
    }

    /// Ends the subscription of `key` (or drops its claim); whether there was one.
    @discardableResult
    func remove(_ key: Key, on connection: RPCConnection) -> Bool {
        let entry = connections.withLock { $0[connection.id]?.removeValue(forKey: key) }
        entry?.cancel?()
        return entry != nil
    }

    /// Ends every subscription of `connection` whose key `matches`.
    func remove(on connection: RPCConnection, where matches: (Key) -> Bool) {
        let ended = connections.withLock { connections -> [Entry] in
            guard let held = connections[connection.id] else { return [] }
            let gone = held.filter { matches($0.key) }
            for key in gone.keys { connections[connection.id]?[key] = nil }
            return Array(gone.values)
        }
        for entry in ended { entry.cancel?() }
    }
}
