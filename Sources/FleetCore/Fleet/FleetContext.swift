import BlueZ
import Logging

/// What every board actor shares: the BlueZ client, the adapter's connect scheduler and
/// discovery governor, the configuration, the event stream, and the fleet's
/// connection-slot arbiter.
final class FleetContext: Sendable {
    let client: BlueZClient
    let configuration: FleetConfiguration
    let scheduler: ConnectScheduler
    /// Discovery pauses while connects are wanted (see ``DiscoveryGovernor``).
    let discovery: DiscoveryGovernor
    let events: EventBroadcaster<FleetEvent>
    let tally: FleetTally
    let logger: Logger
    /// Called with the connect permit held: may the board take a link now? `command` says
    /// a user is waiting (then an idle board may be evicted).
    let reserveSlot: @Sendable (BoardAddress, _ command: Bool) async -> Bool

    init(
        client: BlueZClient, configuration: FleetConfiguration, events: EventBroadcaster<FleetEvent>,
        tally: FleetTally, logger: Logger, reserveSlot: @escaping @Sendable (BoardAddress, Bool) async -> Bool
    ) {
        self.client = client
        self.configuration = configuration
        self.scheduler = ConnectScheduler(limit: configuration.concurrentConnects)
        self.discovery = DiscoveryGovernor(
            client: client, filter: DiscoveryFilter(serviceUUIDs: [NanoProfile.ledService.bluetooth]), logger: logger)
        self.events = events
        self.tally = tally
        self.logger = logger
        self.reserveSlot = reserveSlot
    }
}
