import CMosquitto

// libmosquitto's callbacks: C function pointers without captures. Each turns the context
// pointer (set in MQTTEngine.init) back into the engine, unretained: the engine outlives
// the network thread, the only thread that runs them.

extension MQTTEngine {
    func installCallbacks() {
        handle.setCallbacks(
            connect: { _, context, code in engine(context)?.didConnect(code) },
            disconnect: { _, context, code in engine(context)?.didDisconnect(code) },
            publish: { _, context, messageID in engine(context)?.didPublish(messageID) },
            message: { _, context, message in
                guard let engine = engine(context), let message = message?.pointee, let topic = message.topic else { return }
                let payload: [UInt8] =
                    if let bytes = message.payload, message.payloadlen > 0 {
                        Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
                    } else {
                        []
                    }
                engine.didReceive(
                    MQTTMessage(
                        topic: String(cString: topic), payload: payload,
                        qos: MQTTQoS(rawValue: message.qos) ?? .atMostOnce, retain: message.retain))
            },
            subscribe: { _, context, messageID, count, granted in
                let codes = granted.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
                engine(context)?.didSubscribe(messageID, granted: codes)
            },
            unsubscribe: { _, context, messageID in engine(context)?.didUnsubscribe(messageID) }
        )
    }
}

private func engine(_ context: UnsafeMutableRawPointer?) -> MQTTEngine? {
    context.map { Unmanaged<MQTTEngine>.fromOpaque($0).takeUnretainedValue() }
}
