/// What the bridge has to publish and has not handed to the MQTT client yet: bounded, one
/// entry per topic (a newer value replaces a queued one), oldest temperature updates dropped
/// first when full. A slow or absent broker therefore costs at most `limit` messages of
/// memory and never slows the fleet.
struct MQTTOutbox: Sendable {
    struct Message: Sendable, Hashable {
        var topic: String
        var payload: [UInt8]
        var retain: Bool
        /// A temperature update: the first to go when the outbox is full.
        var isTemperature: Bool = false
    }

    let limit: Int
    private var order: [String] = []
    private var messages: [String: Message] = [:]
    /// Temperature updates (and, with none left to drop, other messages) that were dropped
    /// or replaced by a newer value before they could be sent.
    private(set) var dropped = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    var count: Int { order.count }
    var isEmpty: Bool { order.isEmpty }

    /// Queues `message`; a queued one for the same topic is replaced in place.
    mutating func put(_ message: Message) {
        if let queued = messages[message.topic] {
            if queued.isTemperature { dropped += 1 }
            messages[message.topic] = message
            return
        }
        if order.count >= limit {
            let victim = order.firstIndex { messages[$0]?.isTemperature == true } ?? 0
            messages[order.remove(at: victim)] = nil
            dropped += 1
        }
        order.append(message.topic)
        messages[message.topic] = message
    }

    /// The oldest queued message, removed.
    mutating func take() -> Message? {
        guard !order.isEmpty else { return nil }
        return messages.removeValue(forKey: order.removeFirst())
    }
}
