// mqtt-will-probe URL CLIENT-ID STATUS-TOPIC
//
// Test fixture: an MQTT client whose last will is a retained "offline" on STATUS-TOPIC.
// Once connected it publishes a retained "online" there (QoS 1) and prints "online" when
// the broker acknowledged it; then it waits to be killed. MQTTTests kills it with SIGKILL
// to check that the broker publishes the will for a client that dies without disconnecting.
// A client that cannot be made is reported on stderr as "mqtt-will-probe: KIND: MESSAGE", exit 1.
import Foundation
import MQTT

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: mqtt-will-probe URL CLIENT-ID STATUS-TOPIC\n".utf8))
    exit(2)
}
let topic = arguments[3]
let client: MQTTClient
do {
    client = try MQTTClient(
        configuration: .init(
            url: try MQTTURL(arguments[1]), clientID: arguments[2],
            will: .init(topic: topic, payload: Array("offline".utf8), qos: .atLeastOnce, retain: true),
            reconnectDelayMin: .milliseconds(50), reconnectDelayMax: .milliseconds(500)))
} catch let error as MQTTError {
    // MQTTTests checks what a client says when libmosquitto cannot be loaded.
    FileHandle.standardError.write(Data("mqtt-will-probe: \(error.kind): \(error)\n".utf8))
    exit(1)
}
try client.start()
var online: Int32?
for await event in client.events {
    FileHandle.standardError.write(Data("mqtt-will-probe: \(event)\n".utf8))
    switch event {
    case .connected:
        online = try client.publish(topic: topic, payload: Array("online".utf8), qos: .atLeastOnce, retain: true)
    case .published(let id) where id == online:
        FileHandle.standardOutput.write(Data("online\n".utf8))
    default:
        break
    }
}
