import Testing

@testable import FleetCore

@Suite struct FleetConfigurationTests {
    @Test func defaults() {
        let configuration = FleetConfiguration()
        #expect(configuration.connectionLimit == 7)
        #expect(configuration.concurrentConnects == 1)
        #expect(configuration.connectTimeout == .seconds(10))
        #expect(configuration.defaultCommandTimeout == .seconds(5))
        #expect(configuration.temperatureMaxAge == .seconds(10))
        #expect(configuration.adoption == AdoptionPolicy(autoAdopt: true, allowList: []))
        #expect(configuration.reconnect == ReconnectPolicy())
        #expect(configuration.stateDirectory == "/var/lib/blefleet")
    }

    @Test func nonsensicalLimitsAreClamped() {
        let configuration = FleetConfiguration(connectionLimit: 0, concurrentConnects: -1, eventBufferSize: 0)
        #expect(configuration.connectionLimit == 1)
        #expect(configuration.concurrentConnects == 1)
        #expect(configuration.eventBufferSize == 1)
    }
}
