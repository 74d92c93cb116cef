// registry-writer DIRECTORY [FIRST-GENERATION]
//
// Test fixture: saves the board registry in DIRECTORY in a tight loop, generation after
// generation, until killed. Generation g holds (g % 40) + 1 boards whose names encode g, so
// a reader can check that a file is exactly one complete generation. Prints "started" after
// the first save. See RegistryFileTests "registry survives a SIGKILL in the middle of writes".
import FleetCore
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: registry-writer DIRECTORY [FIRST-GENERATION]\n".utf8))
    exit(2)
}
let file = RegistryFile(directory: arguments[1])
var generation = arguments.count >= 3 ? Int(arguments[2]) ?? 1 : 1

/// The boards of generation `g` (the test has the same function).
func boards(generation g: Int) -> [BoardRecord] {
    let epoch = Date(timeIntervalSince1970: 1_700_000_000)
    var boards: [BoardRecord] = []
    for i in 0...(g % 40) {
        let address = BoardAddress(String(format: "02:00:00:00:%02X:%02X", i / 256, i % 256))!
        let name: String = "gen-\(g)-board-\(i)-" + String(repeating: "x", count: 40)
        let alias: String? = i % 3 == 0 ? "alias-\(g)-\(i)" : nil
        let led: DesiredLED = (g + i) % 2 == 0 ? .on : .off
        let lastSeen = epoch.addingTimeInterval(Double(g))
        boards.append(BoardRecord(address: address, name: name, alias: alias, desiredLED: led, firstSeen: epoch, lastSeen: lastSeen))
    }
    return boards
}

var announced = false
while true {
    do {
        try file.save(boards(generation: generation))
    } catch {
        FileHandle.standardError.write(Data("registry-writer: \(error)\n".utf8))
        exit(1)
    }
    if !announced {
        print("started", terminator: "\n")
        fflush(nil)
        announced = true
    }
    generation += 1
}
