import Testing

@testable import FleetRPC
import JSONRPC

@Suite struct RPCMethodDescriptorTests {
    private func check(_ descriptor: RPCMethodDescriptor, _ params: String?) throws(RPCError) -> [String: JSONValue] {
        let parsed: RPCParams?
        switch params.map({ try? JSONValue(parsing: $0) }) {
        case .object(let members)??: parsed = .byName(members)
        case .array(let elements)??: parsed = .byPosition(elements)
        default: parsed = nil
        }
        return try descriptor.validate(parsed).values
    }

    private func refusal(_ descriptor: RPCMethodDescriptor, _ params: String?) -> String? {
        do {
            _ = try check(descriptor, params)
            return nil
        } catch {
            #expect(error.code == -32602)
            return error.message
        }
    }

    @Test func acceptsValidParamsByNameAndPosition() throws {
        #expect(try check(FleetMethods.LedSet.descriptor, #"{"select":"all","on":true}"#) == ["select": "all", "on": true])
        #expect(try check(FleetMethods.LedSet.descriptor, #"["lab-*",false,100]"#) == ["select": "lab-*", "on": false, "timeoutMs": 100])
        #expect(try check(FleetMethods.LedSet.descriptor, #"{"select":"all","on":true,"timeoutMs":null}"#).count == 2)
        #expect(try check(FleetMethods.DaemonStatus.descriptor, nil) == [:])
        #expect(try check(FleetMethods.GattWrite.descriptor, #"{"address":"aa:bb:cc:dd:ee:ff","service":"180f","characteristic":"d888a9c3-f3cc-11ed-a05b-0242ac120003","value":"01"}"#).count == 4)
    }

    @Test(arguments: [
        (#"{"select":"all"}"#, #"missing required parameter "on" (a boolean (true or false))"#),
        (#"{"select":"all","on":"yes"}"#, #""on" must be a boolean (true or false), got a string "yes""#),
        (#"{"select":"all","on":true,"colour":1}"#, #"unknown parameter "colour"; led.set takes select, on, timeoutMs"#),
        (#"{"select":5,"on":true}"#, #""select": a selection is "all""#),
        (#"{"select":[],"on":true}"#, #""select": an empty list selects no board"#),
        (#"{"select":"all","on":true,"timeoutMs":0}"#, #""timeoutMs" must be an integer from 1 to 600000, got an integer 0"#),
        (#"{"select":"all","on":true,"timeoutMs":1.5}"#, #""timeoutMs" must be an integer"#),
        (#"["all",true,1,2]"#, "led.set takes at most 3 parameters (select, on, timeoutMs), got 4"),
    ])
    func refusesBadLedSetParamsNamingTheParameter(params: String, message: String) {
        let text = refusal(FleetMethods.LedSet.descriptor, params)
        #expect(text?.contains(message) == true, "message was \(text ?? "nil")")
    }

    @Test func metaIsOutOfBandNeverAParameter() throws {
        #expect(try check(FleetMethods.LedSet.descriptor, #"{"select":"all","on":true,"_meta":{"user":"teacher"}}"#) == ["select": "all", "on": true])
        #expect(try check(FleetMethods.DaemonStatus.descriptor, #"{"_meta":{"user":"teacher"}}"#) == [:])
        let request = RPCRequest(method: "led.set", params: .byName(["_meta": ["user": "teacher"]]), id: .int(1))
        #expect(request.meta == ["user": "teacher"])
        #expect(RPCRequest(method: "led.set", params: .byPosition(["all", true]), id: .int(1)).meta == nil)
    }

    @Test func enforcesExactlyOneOfSelectAndAddress() {
        let base = #""service":"180f","characteristic":"2a19""#
        #expect(refusal(FleetMethods.GattRead.descriptor, "{\(base)}")?.contains(#"give "select" or "address""#) == true)
        #expect(
            refusal(FleetMethods.GattRead.descriptor, #"{"select":"all","address":"AA:BB:CC:DD:EE:FF",\#(base)}"#)?
                .contains("not both") == true)
        #expect(refusal(FleetMethods.GattRead.descriptor, #"{"address":"AA:BB",\#(base)}"#)?.contains("Bluetooth address") == true)
        #expect(refusal(FleetMethods.GattWrite.descriptor, #"{"select":"all",\#(base),"value":"abc"}"#)?.contains("hex") == true)
        #expect(refusal(FleetMethods.GattRead.descriptor, #"{"select":"all","service":"xyz","characteristic":"2a19"}"#)?.contains("UUID") == true)
        #expect(refusal(FleetMethods.EventsSubscribe.descriptor, #"{"topics":["nope"]}"#)?.contains(#"one of "boards""#) == true)
        #expect(refusal(FleetMethods.BoardsScan.descriptor, #"{"seconds":0}"#)?.contains("a number from 0.1 to 300.0") == true)
    }

    @Test func methodNamesAreTheFixedOnes() {
        #expect(
            Set(FleetMethods.descriptors.map(\.name)) == [
                "led.set", "temperature.read", "boards.list", "boards.scan", "boards.connect", "boards.disconnect",
                "boards.forget", "boards.alias", "boards.identify", "gatt.read", "gatt.write", "gatt.notify", "events.subscribe",
                "events.unsubscribe",
                "daemon.status", "switch.set", "sensor.read", "history.read",
                "devices.watch", "devices.unwatch", "devices.connected", "device.connect", "device.disconnect", "device.services",
                "device.read",
                "device.write", "device.notify", "device.pair", "device.unpair",
            ])
        // The read-only group may scan and read any device; connecting and writing need control.
        #expect(
            FleetMethods.descriptors.filter { $0.name.hasPrefix("device") && $0.access == .write }.map(\.name).sorted()
                == ["device.connect", "device.disconnect", "device.pair", "device.unpair", "device.write"])
        #expect(FleetMethods.SwitchSet.descriptor.access == .write)
        #expect(FleetMethods.SensorRead.descriptor.access == .read)
        #expect(FleetMethods.LedSet.descriptor.access == .write)
        #expect(FleetMethods.TemperatureRead.descriptor.access == .read)
        #expect(FleetMethods.BoardsList.descriptor.access == .read)
    }
}
