import Foundation
import Testing

@testable import FleetRPC
import JSONRPC

@Suite struct OpenRPCDocumentTests {
    @Test func documentIsValidJSONListingEveryMethod() throws {
        let document = OpenRPCDocument.make(methods: FleetMethods.descriptors, title: "blefleet", apiVersion: BlefleetVersion.current)
        let bytes = document.serialized()
        // Foundation, an independent parser, reads it.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["openrpc"] as? String == "1.2.6")
        let info = try #require(object["info"] as? [String: Any])
        #expect(info["title"] as? String == "blefleet")
        #expect(info["version"] is String)
        let methods = try #require(object["methods"] as? [[String: Any]])
        #expect(methods.compactMap { $0["name"] as? String } == FleetMethods.descriptors.map(\.name))
        for (method, descriptor) in zip(methods, FleetMethods.descriptors) {
            let params = try #require(method["params"] as? [[String: Any]])
            #expect(params.compactMap { $0["name"] as? String } == descriptor.params.map(\.name))
            for param in params {
                #expect(param["schema"] is [String: Any])
                #expect(param["required"] is Bool)
            }
            let result = try #require(method["result"] as? [String: Any])
            #expect(result["name"] is String && result["schema"] is [String: Any])
            #expect(method["x-access"] as? String == descriptor.access.rawValue)
        }
    }

    @Test func everyErrorReferenceResolves() throws {
        let document = OpenRPCDocument.make(methods: FleetMethods.descriptors, title: "blefleet", apiVersion: BlefleetVersion.current)
        let components = try #require(document["components"]?["errors"]?.objectValue)
        for method in document["methods"]?.arrayValue ?? [] {
            for reference in method["errors"]?.arrayValue ?? [] {
                let ref = try #require(reference["$ref"]?.stringValue)
                #expect(ref.hasPrefix("#/components/errors/"))
                let key = String(ref.dropFirst("#/components/errors/".count))
                let error = try #require(components[key])
                #expect(error["code"]?.int64Value != nil && error["message"]?.stringValue != nil)
            }
        }
    }
}
