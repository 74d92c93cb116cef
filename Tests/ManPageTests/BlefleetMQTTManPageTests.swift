import FleetRPC
import Foundation
import Testing

/// blefleet-mqtt(7) against the topics the bridge and `blectl --broker` use.
@Suite("man/blefleet-mqtt.7")
struct BlefleetMQTTManPageTests {
    @Test("Every topic the bridge publishes or reads is documented")
    func topics() throws {
        let page = try ManPage("blefleet-mqtt.7")
        let topics = FleetTopics(prefix: "prefix")
        let address = "F0:0D:00:00:00:01"
        // Rendered with the placeholders the page uses.
        func documented(_ topic: String) -> String {
            topic.replacingOccurrences(of: FleetTopics.boardID(address), with: "board")
                .replacingOccurrences(of: "/gateway/", with: "/gateway/")
        }
        for topic in [
            topics.status("gateway"), topics.availability("gateway", address), topics.led("gateway", address),
            topics.ledSet("gateway", address), topics.temperature("gateway", address), topics.state("gateway", address),
            topics.allLEDSet(), topics.allLEDSet("gateway"), topics.result("gateway", "request"),
        ] {
            #expect(page.rendered.contains(documented(topic)), "\(documented(topic)) is not in blefleet-mqtt(7)")
        }
    }

    @Test("The fleet-wide command shown is one the bridge accepts")
    func commandExample() throws {
        let page = try ManPage("blefleet-mqtt.7")
        let example = #"{"on": true, "request": "r42", "timeoutMs": 5000}"#
        #expect(page.source.contains(example))
        let command = try JSONDecoder().decode(FleetLEDCommand.self, from: Data(example.utf8))
        #expect(command.problem == nil && command.on && command.request == "r42")
    }

    @Test("mandoc -Tlint finds nothing but references to pages not installed")
    func lint() throws {
        #expect(try ManPage("blefleet-mqtt.7").lintProblems() == [])
    }
}
