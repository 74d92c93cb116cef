import BlueZ
import DBus
import Logging
import TestSupport

/// The Nano sketch's GATT table (shared/BOARD-PROFILE.md).
enum Nano {
    static let ledService = BluetoothUUID("cd48409a-f3cc-11ed-a05b-0242ac120003")!
    static let ledStatus = BluetoothUUID("cd48409b-f3cc-11ed-a05b-0242ac120003")!
    static let sensorService = BluetoothUUID("d888a9c2-f3cc-11ed-a05b-0242ac120003")!
    static let temperature = BluetoothUUID("d888a9c3-f3cc-11ed-a05b-0242ac120003")!
}

/// A BlueZ client on a testbed's bus, with its mirror running and loaded.
struct BlueZFixture {
    let testbed: Testbed
    let client: BlueZClient
    let central: BlueZAdapter

    static func with<T: Sendable>(
        lane: Lane = .bluezoo, boards: Int = 5, extraArguments: [String] = [],
        _ body: (BlueZFixture) async throws -> T
    ) async throws -> T {
        try await Testbed.with(lane: lane, boards: boards, extraArguments: extraArguments) { testbed in
            let connection = try await DBusConnection.connect(to: .address(testbed.busAddress))
            defer { connection.close() }
            var logger = Logger(label: "blefleet.tests.bluez")
            logger.logLevel = .warning
            let client = BlueZClient(connection: connection, logger: logger)
            let runner = Task { try await client.run() }
            defer { runner.cancel() }
            try await client.mirror.waitUntilLoaded(timeout: .seconds(10))
            guard let central = await client.adapter("hci0") else {
                throw FixtureError("the testbed has no adapter hci0")
            }
            return try await body(BlueZFixture(testbed: testbed, client: client, central: central))
        }
    }

    /// Scans with the LED-service filter until `count` boards are known on the central, then
    /// stops discovery (connecting while discovering waits for a discovery window on real BlueZ).
    func discoverBoards(count: Int, timeout: Duration = .seconds(10)) async throws -> [BlueZDevice] {
        let filter = DiscoveryFilter(serviceUUIDs: [Nano.ledService])
        try await client.startDiscovery(adapter: central, filter: filter)
        let centralPath = central.path
        let found: Result<[BlueZDevice], any Error>
        do {
            found = .success(try await client.mirror.wait(timeout: testbed.lane.allowing(timeout), description: "\(count) boards not discovered") {
                let found = $0.tree.devices(onAdapter: centralPath).filter(filter.matches)
                return found.count >= count ? .done(found) : .pending
            })
        } catch {
            found = .failure(error)
        }
        try? await client.stopDiscovery(adapter: central)
        return try found.get()
    }
}
