import Foundation
import Logging
import Systemd
import Testing
import TestSupport

@Suite struct StderrLogHandlerTests {
    /// Logs through a handler writing into a pipe and returns what came out.
    func capture(
        colour: Bool? = false, provider: Logger.MetadataProvider? = nil, _ body: (inout Logger) -> Void
    ) throws -> String {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw FixtureError("pipe failed: errno \(errno)") }
        let reader = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
        var logger = Logger(label: "blefleet.test") { label in
            StderrLogHandler(
                label: label, identifier: "blefleetd", logLevel: .debug, fileDescriptor: fds[1], colour: colour,
                metadataProvider: provider)
        }
        body(&logger)
        close(fds[1])
        return String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
    }

    @Test func oneReadableLinePerMessage() throws {
        let text = try capture { logger in
            logger[metadataKey: "ble.address"] = "F4:12:FA:6B:01:02"
            logger.warning("Connect failed", metadata: ["rpc.method": "board.connect"])
            logger.info("Connected")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        try #require(lines.count == 3, "\(text)")  // two lines and the final newline
        #expect(lines[2].isEmpty)
        let timestamp = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{4}/
        let first = try #require(lines[0].wholeMatch(of: /(.+?) (.+)/))
        #expect(first.1.wholeMatch(of: timestamp) != nil, "\(first.1)")
        #expect(first.2 == "warning blefleetd blefleet.test: Connect failed ble.address=F4:12:FA:6B:01:02 rpc.method=board.connect")
        #expect(lines[1].hasSuffix(" info blefleetd blefleet.test: Connected ble.address=F4:12:FA:6B:01:02"))
    }

    @Test func lineBreaksAndSpacesAreEscaped() throws {
        let text = try capture { logger in
            logger.error(
                "Two\nlines", metadata: ["dump": "a \"b\"\nc", "empty": "", "path": "/org/bluez/hci0"])
        }
        #expect(text.split(separator: "\n").count == 1)
        #expect(text.hasSuffix(#" error blefleetd blefleet.test: Two\nlines dump="a \"b\"\nc" empty="" path=/org/bluez/hci0"# + "\n"))
    }

    @Test func errorsAreShown() throws {
        let text = try capture { logger in
            logger.error("Failed", error: SystemdError.unknownLogTarget("syslog"))
        }
        #expect(text.contains(#"Failed error="Unknown log target \"syslog\"; expected one of: auto, journal, stderr.""#), "\(text)")
    }

    @Test func laterMetadataWins() throws {
        let provider = Logger.MetadataProvider { ["source.of": "provider", "task": "scan"] }
        let text = try capture(provider: provider) { logger in
            logger[metadataKey: "source.of"] = "logger"
            logger[metadataKey: "kept"] = "yes"
            logger.info("A")
            logger.info("B", metadata: ["source.of": "message"])
        }
        let lines = text.split(separator: "\n")
        try #require(lines.count == 2)
        #expect(lines[0].hasSuffix("A kept=yes source.of=provider task=scan"))
        #expect(lines[1].hasSuffix("B kept=yes source.of=message task=scan"))
    }

    @Test func levelsBelowTheLogLevelAreDropped() throws {
        let text = try capture { logger in
            logger.logLevel = .notice
            logger.info("hidden")
            logger.notice("shown")
        }
        #expect(!text.contains("hidden"))
        #expect(text.contains(" notice blefleetd blefleet.test: shown"))
    }

    @Test func colourOnlyWhenAsked() throws {
        let coloured = try capture(colour: true) { $0.warning("W") }
        #expect(coloured.contains("\u{1B}[33mwarning\u{1B}[0m blefleetd"))
        // A pipe is not a terminal: automatic detection picks no colour.
        let automatic = try capture(colour: nil) { $0.warning("W") }
        #expect(!automatic.contains("\u{1B}"))
        #expect(automatic.contains(" warning blefleetd"))
    }
}
