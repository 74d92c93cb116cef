/// The values of one characteristic as BlueZ reports them (`Value` changes: notifications,
/// and reads). Mapped straight from the mirror's events for that object, with no task in
/// between, so each value costs one hand-off from the mirror to the consumer.
///
/// Throws `.notConnected` when the device's link goes (its services are no longer
/// resolved: real BlueZ keeps the characteristic objects of a disconnected device, BlueZoo
/// removes them), `.objectVanished` when the characteristic or device goes away and
/// `.serviceUnavailable` when `org.bluez` does; ends when the consuming task is cancelled.
/// `StopNotify` is sent once the last copy of the stream and its iterator is released.
public struct BlueZValueStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = any Error

    let events: AsyncStream<BlueZMirrorEvent>
    let path: String
    let session: Session

    /// What a value stream of the characteristic at `path` listens to: the characteristic
    /// and its device.
    static func watched(_ path: String) -> (paths: Set<String>, interfaces: Set<String>) {
        ([path, devicePath(of: path)], [BlueZInterfaces.gattCharacteristic, BlueZInterfaces.device])
    }

    /// `/org/bluez/hci0/dev_AA_BB/service000a/char000b` → `/org/bluez/hci0/dev_AA_BB`.
    static func devicePath(of path: String) -> String {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false)
        while let last = parts.last, !last.hasPrefix("dev_") { parts.removeLast() }
        return parts.joined(separator: "/")
    }

    /// Ends the notification session when released.
    final class Session: Sendable {
        let onEnd: @Sendable () -> Void

        init(onEnd: @escaping @Sendable () -> Void) {
            self.onEnd = onEnd
        }

        deinit { onEnd() }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = [UInt8]
        public typealias Failure = any Error

        var base: AsyncStream<BlueZMirrorEvent>.AsyncIterator
        let path: String
        let session: Session
        var finished = false

        public mutating func next() async throws -> [UInt8]? {
            try await next(isolation: nil)
        }

        /// Runs on the caller's actor: a consumer on an actor gets each value without an
        /// extra hop through the global executor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
            guard !finished else { return nil }
            while let event = await base.next(isolation: actor) {
                switch BlueZValueStream.classify(event, path: path) {
                case .value(let value):
                    return value
                case .end(let error):
                    finished = true
                    throw error
                case .none:
                    continue
                }
            }
            finished = true
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: events.makeAsyncIterator(), path: path, session: session)
    }

    /// What a mirror event means for the values of the characteristic at `path`.
    enum Meaning {
        /// A new value.
        case value([UInt8])
        /// The characteristic (or BlueZ) went away: no more values.
        case end(BlueZError)
    }

    /// One place for both ways of following a characteristic (this stream, and the handler
    /// of ``BlueZClient/notifications(_:timeout:onValue:onEnd:)``); `nil` for other events.
    static func classify(_ event: BlueZMirrorEvent, path: String) -> Meaning? {
        switch event {
        case .propertiesChanged(path, BlueZInterfaces.gattCharacteristic, let changed, _):
            return changed["Value"]?.bytes.map(Meaning.value)
        case .interfacesRemoved(path, let interfaces) where interfaces.contains(BlueZInterfaces.gattCharacteristic):
            return .end(.objectVanished("characteristic \(path) went away"))
        case .propertiesChanged(let device, BlueZInterfaces.device, let changed, _)
        where changed["ServicesResolved"]?.bool == false && device == devicePath(of: path):
            return .end(.notConnected("the link to \(device) went down"))
        case .interfacesRemoved(let device, let interfaces)
        where interfaces.contains(BlueZInterfaces.device) && device == devicePath(of: path):
            return .end(.objectVanished("device \(device) went away"))
        case .serviceLost:
            return .end(.serviceUnavailable("org.bluez left the bus"))
        default:
            return nil
        }
    }
}
