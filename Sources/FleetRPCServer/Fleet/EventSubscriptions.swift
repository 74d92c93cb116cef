public import FleetCore
public import FleetRPC
import JSONRPC
import FleetWire
import Foundation
import Synchronization

/// `events.subscribe`: forwards fleet events to each subscribed connection as
/// `events.event` notifications. Each connection has its own bounded buffer (the fleet never
/// waits for a client), and an event is sent only while the connection's queue has room
/// (``RPCConnection/waitForRoom()``): when a client falls behind, the oldest events are
/// dropped and it gets `events.dropped {count}` and then the next events, and keeps its
/// connection.
public final class EventSubscriptions: Sendable {
    private struct Subscriber {
        var topics: Set<EventTopic>
        let task: Task<Void, Never>
    }

    private let events: EventBroadcaster<FleetEvent>
    private let bufferSize: Int
    private let subscribers = Mutex<[UInt64: Subscriber]>([:])

    public init(events: EventBroadcaster<FleetEvent>, bufferSize: Int) {
        self.events = events
        self.bufferSize = bufferSize
    }

    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    /// Adds `topics` to what `connection` receives; returns all its topics now.
    public func subscribe(_ connection: RPCConnection, to topics: Set<EventTopic>) -> [EventTopic] {
        let id = connection.id
        let (current, isNew): (Set<EventTopic>, Bool) = subscribers.withLock { subscribers in
            if var existing = subscribers[id] {
                existing.topics.formUnion(topics)
                subscribers[id] = existing
                return (existing.topics, false)
            }
            let subscription = events.subscribe(bufferSize: bufferSize)
            let task = Task { [weak self] in
                for await delivery in subscription {
                    await connection.waitForRoom()
                    guard let self, self.forward(delivery, to: connection) else { break }
                }
                self?.remove(id)
            }
            subscribers[id] = Subscriber(topics: topics, task: task)
            return (topics, true)
        }
        if isNew { connection.onClose { [weak self] in self?.remove(id) } }
        return current.sorted { $0.rawValue < $1.rawValue }
    }

    /// Removes `topics` (all when nil) from what `connection` receives; returns what is left.
    public func unsubscribe(_ connection: RPCConnection, from topics: Set<EventTopic>?) -> [EventTopic] {
        let left: Set<EventTopic> = subscribers.withLock { subscribers in
            guard var existing = subscribers[connection.id] else { return [] }
            existing.topics.subtract(topics ?? existing.topics)
            if existing.topics.isEmpty {
                existing.task.cancel()
                subscribers[connection.id] = nil
            } else {
                subscribers[connection.id] = existing
            }
            return existing.topics
        }
        return left.sorted { $0.rawValue < $1.rawValue }
    }

    private func remove(_ id: UInt64) {
        subscribers.withLock { $0.removeValue(forKey: id) }?.task.cancel()
    }

    /// Sends one delivery; false when the connection is gone or too slow (stop forwarding).
    private func forward(_ delivery: EventBroadcaster<FleetEvent>.Delivery, to connection: RPCConnection) -> Bool {
        switch delivery {
        case .dropped(let count):
            return connection.notify(method: EventNotification.droppedMethod, params: ["count": count])
        case .event(let event):
            let notification = Self.notification(for: event)
            let wanted = subscribers.withLock { $0[connection.id]?.topics.contains(notification.topic) ?? false }
            guard wanted else { return !connection.isClosed }
            return connection.notify(method: EventNotification.method, params: notification)
        }
    }

    static func notification(for event: FleetEvent) -> EventNotification {
        let time = Date().formatted(.iso8601)
        switch event {
        case .boardPhaseChanged(let address, let from, let to): return EventNotification(.state(from: from, to: to), address: address.rawValue, time: time)
        case .boardAdded(let address, let name): return EventNotification(.added(name: name), address: address.rawValue, time: time)
        case .boardRemoved(let address): return EventNotification(.removed, address: address.rawValue, time: time)
        case .boardAliased(let address, let alias): return EventNotification(.alias(alias), address: address.rawValue, time: time)
        case .temperature(let address, let celsius):
            return EventNotification(.temperature(celsius: celsius.degrees), address: address.rawValue, time: time)
        case .sensor(let address, let name, let value, let unit):
            return EventNotification(.sensor(name: name, value: value, unit: unit), address: address.rawValue, time: time)
        case .ledApplied(let address, let on): return EventNotification(.led(on: on), address: address.rawValue, time: time)
        case .adapterPowered(let powered): return EventNotification(.adapter(powered: powered), time: time)
        }
    }
}
