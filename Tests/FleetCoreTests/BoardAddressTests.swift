import Foundation
import Testing

@testable import FleetCore

@Suite struct BoardAddressTests {
    @Test func normalizesToUpperCase() throws {
        let address = try BoardAddress(parsing: "c0:98:e5:49:0a:bf")
        #expect(address.rawValue == "C0:98:E5:49:0A:BF")
        #expect(address.description == "C0:98:E5:49:0A:BF")
        #expect(address == BoardAddress("C0:98:E5:49:0A:BF"))
    }

    @Test(arguments: ["", "C0:98:E5:49:0A", "C0:98:E5:49:0A:BF:01", "C0-98-E5-49-0A-BF", "C0:98:E5:49:0A:BG", "C0:98:E5:49:0A:B", "C0:98:E5:49::0ABF", " C0:98:E5:49:0A:BF"])
    func rejectsMalformedText(_ text: String) {
        #expect(BoardAddress(text) == nil)
        #expect(throws: BoardAddressError.self) { try BoardAddress(parsing: text) }
    }

    @Test func errorIsASentenceNamingTheInput() {
        do {
            _ = try BoardAddress(parsing: "nano-07")
            Issue.record("parsed a name as an address")
        } catch {
            #expect(error.description == "\"nano-07\" is not a Bluetooth address (like AA:BB:CC:DD:EE:FF): it must have six colon-separated parts.")
        }
    }

    @Test func codableAsString() throws {
        let address = try BoardAddress(parsing: "aa:bb:cc:dd:ee:ff")
        let data = try JSONEncoder().encode([address])
        #expect(String(decoding: data, as: UTF8.self) == #"["AA:BB:CC:DD:EE:FF"]"#)
        #expect(try JSONDecoder().decode([BoardAddress].self, from: data) == [address])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([BoardAddress].self, from: Data(#"["AA:BB"]"#.utf8))
        }
    }

    @Test func ordersByText() throws {
        let a = try BoardAddress(parsing: "00:00:00:00:00:02")
        let b = try BoardAddress(parsing: "00:00:00:00:00:0A")
        #expect([b, a].sorted() == [a, b])
    }
}
