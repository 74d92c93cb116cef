import BlueZ

/// The values one board notifies for a characteristic (`Fleet.notifications`); it ends with
/// a ``FleetError`` when the board's link goes, or BlueZ does. Releasing it ends the
/// subscription.
public struct NotificationStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = any Error

    let values: BlueZValueStream
    let address: BoardAddress

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: BlueZValueStream.AsyncIterator
        let address: BoardAddress

        public mutating func next() async throws -> [UInt8]? {
            do {
                return try await base.next()
            } catch let error as BlueZError {
                throw FleetError(gatt: error, board: address)
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: values.makeAsyncIterator(), address: address)
    }
}
