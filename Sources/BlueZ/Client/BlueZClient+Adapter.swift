extension BlueZClient {
    public func adapters() async -> [BlueZAdapter] {
        await mirror.tree.adapters
    }

    /// The adapter called `nameOrAddress` (`hci0` or `00:11:22:33:44:55`), if present now.
    public func adapter(_ nameOrAddress: String) async -> BlueZAdapter? {
        await mirror.tree.adapter(matching: nameOrAddress)
    }

    /// Switches an adapter's `Powered` property.
    public func setPowered(_ powered: Bool, adapter: BlueZAdapter, timeout: Duration = .seconds(10)) async throws {
        try await setProperty(adapter.path.rawValue, BlueZInterfaces.adapter, "Powered", .boolean(powered), timeout: timeout)
    }

    /// The adapter's state (nil while absent) now and after every change of it, deduplicated.
    /// Ends when the consumer stops.
    public func adapterStates(_ nameOrAddress: String) async -> AsyncStream<BlueZAdapter?> {
        let events = await mirror.events()
        let initial = await mirror.tree.adapter(matching: nameOrAddress)
        let mirror = self.mirror
        return AsyncStream { continuation in
            continuation.yield(initial)
            let task = Task {
                var last = initial
                for await _ in events {
                    let current = await mirror.tree.adapter(matching: nameOrAddress)
                    if current != last {
                        last = current
                        continuation.yield(current)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// `Adapter1.RemoveDevice`: forgets a device (and disconnects it).
    public func removeDevice(_ device: BlueZDevice, timeout: Duration = .seconds(10)) async throws {
        try await call(
            device.adapterPath.rawValue, BlueZInterfaces.adapter, "RemoveDevice", [.objectPath(device.path.rawValue)],
            timeout: timeout)
    }
}
