@testable import FleetWeb
import Logging
import NIOCore
import NIOEmbedded
import Testing

@Suite("blefleet-web's connection caps: idle connections give way, serving ones hold their place")
struct WebConnectionsTests {
    final class Key {}

    /// "admitted", "refused", or "reclaimed" with the channel given way.
    func outcome(_ admission: WebConnections.Admission) -> (String, (any Channel)?) {
        switch admission {
        case .refused: ("refused", nil)
        case .admitted(nil): ("admitted", nil)
        case .admitted(let channel?): ("reclaimed", channel)
        }
    }

    @Test("At the cap a new connection takes the place of the one idle longest; one serving keeps it")
    func reclaimsTheIdlest() {
        let connections = WebConnections(limit: 2, perAddress: 100, logger: Logger(label: "test"))
        let (a, b, c, d) = (Key(), Key(), Key(), Key())
        let (channelA, channelB) = (EmbeddedChannel(), EmbeddedChannel())
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(outcome(connections.admit(ObjectIdentifier(a), channel: channelA, address: "10.0.0.1", now: start)).0 == "admitted")
        #expect(outcome(connections.admit(ObjectIdentifier(b), channel: channelB, address: "10.0.0.2", now: start + .seconds(1))).0 == "admitted")
        // b serves a request; a has been idle longest and gives way.
        connections.requestBegan(ObjectIdentifier(b))
        let reclaimed = outcome(connections.admit(ObjectIdentifier(c), channel: EmbeddedChannel(), address: "10.0.0.3"))
        #expect(reclaimed.0 == "reclaimed" && reclaimed.1 === channelA)
        #expect(connections.count == 2)
        // c serves too: nothing is idle, and the next connection is refused.
        connections.requestBegan(ObjectIdentifier(c))
        #expect(outcome(connections.admit(ObjectIdentifier(d), channel: EmbeddedChannel(), address: "10.0.0.4")).0 == "refused")
        #expect(connections.refused.load(ordering: .relaxed) == 1)
        // Once b has answered, it is idle and may give way.
        connections.requestEnded(ObjectIdentifier(b))
        #expect(outcome(connections.admit(ObjectIdentifier(d), channel: EmbeddedChannel(), address: "10.0.0.4")).1 === channelB)
        // A connection already given way and closing later changes nothing.
        connections.closed(ObjectIdentifier(a))
        #expect(connections.count == 2)
    }

    @Test("At an address's cap its own idle connection gives way, not another address's")
    func perAddress() {
        let connections = WebConnections(limit: 100, perAddress: 2, logger: Logger(label: "test"))
        let keys = (0..<4).map { _ in Key() }
        let channels = (0..<4).map { _ in EmbeddedChannel() }
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        _ = connections.admit(ObjectIdentifier(keys[0]), channel: channels[0], address: "10.0.0.9", now: start)
        _ = connections.admit(ObjectIdentifier(keys[1]), channel: channels[1], address: "10.0.0.1", now: start + .seconds(1))
        _ = connections.admit(ObjectIdentifier(keys[2]), channel: channels[2], address: "10.0.0.1", now: start + .seconds(2))
        // 10.0.0.9's connection is idle longest, but 10.0.0.1's own oldest gives way.
        #expect(outcome(connections.admit(ObjectIdentifier(keys[3]), channel: channels[3], address: "10.0.0.1")).1 === channels[1])
        #expect(connections.count == 3)
    }
}
