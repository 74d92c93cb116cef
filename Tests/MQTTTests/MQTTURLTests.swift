import MQTT
import Testing

@Suite struct MQTTURLTests {
    @Test func plainURLsDefaultToPort1883() throws {
        let url = try MQTTURL("mqtt://broker.local")
        #expect(url == MQTTURL(host: "broker.local", port: 1883, usesTLS: false))
        #expect(url.description == "mqtt://broker.local:1883")
    }

    @Test func tlsURLsDefaultToPort8883() throws {
        #expect(try MQTTURL("mqtts://broker.local") == MQTTURL(host: "broker.local", port: 8883, usesTLS: true))
    }

    @Test func portsAndIPv6Literals() throws {
        #expect(try MQTTURL("mqtt://10.0.0.2:1884") == MQTTURL(host: "10.0.0.2", port: 1884))
        #expect(try MQTTURL("MQTTS://h:443/") == MQTTURL(host: "h", port: 443, usesTLS: true))
        let v6 = try MQTTURL("mqtt://[::1]:1885")
        #expect(v6 == MQTTURL(host: "::1", port: 1885))
        #expect(v6.description == "mqtt://[::1]:1885")
    }

    @Test(arguments: [
        ("http://broker", "has the scheme \"http\"; only mqtt:// and mqtts:// are supported."),
        ("broker:1883", "has no scheme: write mqtt://host[:port] or mqtts://host[:port]."),
        ("mqtt://", "has no host name."),
        ("mqtt://:1883", "has no host name."),
        ("mqtt://broker:0", "has the port \"0\"; a port is a number from 1 to 65535."),
        ("mqtt://broker:65536", "has the port \"65536\"; a port is a number from 1 to 65535."),
        ("mqtt://broker:http", "has the port \"http\"; a port is a number from 1 to 65535."),
        ("mqtt://broker:", "has the port \"\"; a port is a number from 1 to 65535."),
        ("mqtt://broker/topic", "has a path, query or fragment; only mqtt://host[:port] is accepted."),
        ("mqtt://user:pw@broker", "contains user information; give the username and password in the configuration instead."),
        ("mqtt://[::1", "has an IPv6 address without its closing bracket."),
    ])
    func badURLsSayWhatIsWrong(text: String, why: String) {
        #expect(throws: MQTTError(.invalidURL, "The broker URL \"\(text)\" \(why)")) { try MQTTURL(text) }
    }
}
