import BlefleetDaemon
import FleetCore
import Foundation
import Testing

@Suite struct DaemonConfigurationTests {
    @Test func defaultsMatchTheDocumentedOnes() {
        let config = DaemonConfiguration()
        #expect(config.socketPath == "/run/blefleet/blefleetd.sock")
        #expect(config.stateDirectory == "/var/lib/blefleet")
        #expect(config.adapter == .named(["hci0"]))
        #expect(config.bus == "system")
        #expect(config.logTarget == .auto)
        #expect(config.connectionLimit == 7)
    }

    @Test func readsEveryKind() throws {
        var config = DaemonConfiguration()
        try config.apply(
            text: """
                # comment
                socket: /tmp/x.sock
                adapter: 00:1a:7d:da:71:13
                connection-limit: 3
                auto-adopt: no
                allow: ["nano-*", "F0:0D:00:00:00:01"]
                read-only-group: lab
                log-target: stderr
                """, source: "test.conf")
        #expect(config.socketPath == "/tmp/x.sock")
        #expect(config.adapter == .named(["00:1A:7D:DA:71:13"]))
        #expect(config.connectionLimit == 3)
        #expect(config.autoAdopt == false)
        #expect(config.allow == ["nano-*", "F0:0D:00:00:00:01"])
        #expect(config.readOnlyGroup == "lab")
        #expect(config.logTarget == .stderr)
    }

    @Test func emptyFileKeepsDefaults() throws {
        var config = DaemonConfiguration()
        try config.apply(text: "# nothing set\n", source: "test.conf")
        #expect(config == DaemonConfiguration())
    }

    @Test(arguments: [
        ("connection-limit: many\n", "test.conf, line 1: connection-limit: got \"many\"; allowed: a whole number from 1 to 32 (per adapter), or a mapping like {default: 5, hci1: 3}"),
        ("adapter: hci\n", "test.conf, line 1: adapter: got \"hci\"; allowed: an adapter name like hci0 or its address like 00:1A:7D:DA:71:13, a list of them like [hci0, hci1], or `all`"),
        ("adapter: [hci0, hci0]\n", "test.conf, line 1: adapter: hci0 is given twice; allowed: an adapter name like hci0 or its address like 00:1A:7D:DA:71:13, a list of them like [hci0, hci1], or `all`"),
        ("adapter: [all, hci1]\n", "test.conf, line 1: adapter: `all` cannot be combined with names; allowed: an adapter name like hci0 or its address like 00:1A:7D:DA:71:13, a list of them like [hci0, hci1], or `all`"),
        ("connection-limit: {hci0: 40}\n", "test.conf, line 1: connection-limit: got \"40\"; allowed: a whole number from 1 to 32 (per adapter), or a mapping like {default: 5, hci1: 3}"),
        ("\nlog-target: syslog\n", "test.conf, line 2: log-target: got \"syslog\"; allowed: auto, journal or stderr"),
        ("socket: relative.sock\n", "test.conf, line 1: socket: got \"relative.sock\"; allowed: an absolute path"),
        ("auto-adopt: maybe\n", "test.conf, line 1: auto-adopt: got \"maybe\"; allowed: true or false"),
    ])
    func badValuesNameLineKeyAndWhatIsAllowed(text: String, message: String) {
        var config = DaemonConfiguration()
        #expect {
            try config.apply(text: text, source: "test.conf")
        } throws: { error in
            String(describing: error) == message
        }
    }

    @Test func unknownKeyListsTheKnownOnes() {
        var config = DaemonConfiguration()
        #expect {
            try config.apply(text: "adaptor: hci0\n", source: "test.conf")
        } throws: { error in
            let text = String(describing: error)
            return text.hasPrefix("test.conf, line 1: adaptor: unknown key; known keys are socket,") && text.contains("adapter")
        }
    }

    @Test func notAMappingOrNotYAMLIsAClearError() {
        var config = DaemonConfiguration()
        #expect(throws: ConfigurationError.self) { try config.apply(text: "- a\n- b\n", source: "t") }
        #expect(throws: ConfigurationError.self) { try config.apply(text: "a: [unclosed\n", source: "t") }
        #expect(throws: ConfigurationError.self) { try config.apply(text: "adapter: hci0\nadapter: hci1\n", source: "t") }
    }

    @Test func missingDefaultFileIsFineButAMissingNamedFileIsNot() throws {
        var config = DaemonConfiguration()
        try config.apply(file: "/nonexistent/blefleetd.conf", required: false)
        #expect {
            try config.apply(file: "/nonexistent/blefleetd.conf", required: true)
        } throws: { error in
            String(describing: error) == "/nonexistent/blefleetd.conf: no such file"
        }
    }

    @Test func flagsOverrideTheFile() throws {
        var config = DaemonConfiguration()
        try config.apply(text: "adapter: hci1\nbus: system\n", source: "t")
        try config.apply(.init(adapter: ["hci0"], bus: "unix:path=/tmp/bus"))
        #expect(config.adapter == .named(["hci0"]))
        #expect(config.bus == "unix:path=/tmp/bus")
        #expect {
            try config.apply(.init(logTarget: "console"))
        } throws: { error in
            String(describing: error) == "command line: --log-target: got \"console\"; allowed: auto, journal or stderr"
        }
    }

    @Test func severalAdaptersFromTheFileOrTheFlags() throws {
        var config = DaemonConfiguration()
        try config.apply(text: "adapter: [hci0, 00:1a:7d:da:71:14]\n", source: "t")
        #expect(config.adapter == .named(["hci0", "00:1A:7D:DA:71:14"]))
        try config.apply(text: "adapter: all\n", source: "t2")
        #expect(config.adapter == .all)
        try config.apply(.init(adapter: ["hci1", "hci2"]))
        #expect(config.adapter == .named(["hci1", "hci2"]))
        #expect {
            try config.apply(.init(adapter: ["hci1", "all"]))
        } throws: { error in
            String(describing: error).hasPrefix("command line: --adapter: `all` cannot be combined with names")
        }
    }

    @Test func connectionLimitPerAdapterWithOverrides() throws {
        var config = DaemonConfiguration()
        try config.apply(text: "connection-limit: {default: 5, hci1: 3}\n", source: "t")
        #expect(config.connectionLimit == 5)
        #expect(config.adapterConnectionLimits == ["hci1": 3])
        let fleet = try config.fleetConfiguration()
        #expect(fleet.connectionLimit == 5)
        #expect(fleet.adapterLimits == ["hci1": 3])
        var plain = DaemonConfiguration()
        try plain.apply(text: "connection-limit: 4\n", source: "t")
        #expect(plain.connectionLimit == 4)
        #expect(plain.adapterConnectionLimits.isEmpty)
    }
}
