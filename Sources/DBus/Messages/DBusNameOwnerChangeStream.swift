/// `NameOwnerChanged` for one name (see ``DBusConnection/nameOwnerChanges(of:)``); same
/// lifetime and failure rules as ``DBusSignalStream``.
public struct DBusNameOwnerChangeStream: AsyncSequence, Sendable {
    public typealias Element = DBusNameOwnerChange
    public typealias Failure = any Error

    let signals: DBusSignalStream

    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = DBusNameOwnerChange
        public typealias Failure = any Error

        var base: DBusSignalStream.AsyncIterator

        public mutating func next() async throws -> DBusNameOwnerChange? {
            while let signal = try await base.next() {
                guard signal.arguments.count == 3, let name = signal.arguments[0].string,
                    let old = signal.arguments[1].string, let new = signal.arguments[2].string
                else { continue }
                return DBusNameOwnerChange(
                    name: name, oldOwner: old.isEmpty ? nil : old, newOwner: new.isEmpty ? nil : new)
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: signals.makeAsyncIterator())
    }
}
