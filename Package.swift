// swift-tools-version: 6.1
// blefleet: one daemon owns the BlueZ adapter and serves a fleet of BLE boards to
// unprivileged clients over JSON-RPC on a Unix socket.
//
// Linux only: it talks to BlueZ over the system D-Bus (libdbus-1) and to systemd
// (libsystemd), both from Debian's -dev packages; no Apple platform is claimed.
//
// Layers (dependencies point one way):
//   blectl → FleetRPCClient → FleetRPC (the fleet API) → JSONRPC (JSON-RPC 2.0, JSON)
//   blefleetd → FleetRPCServer → FleetCore → BlueZ → DBus → CDBus (libdbus-1)
//   FleetModel: the fleet's vocabulary (a board's address, a selection, an outcome, an
//   error code, a phase), defined once under both FleetCore and FleetRPC
//             → Systemd → CSystemd (libsystemd)
//   blectl --broker → MQTT; FleetWire: a board of the core (a snapshot) as the wire describes it
//   blefleet-mqtt (the MQTT bridge, an unprivileged client of the socket) → FleetMQTT
//             → FleetRPCClient, MQTT → CMosquitto (libmosquitto); FleetMQTTSettings: the
//             mqtt: keys of blefleetd.conf, read by it and checked by blefleetd
//   blefleet-mqtt and blefleet-web → ClientCommandLine (their --log-target/--log-level, signals)
//   blefleet-web (dashboard, /metrics; an unprivileged client of the socket) → FleetWeb
//             → FleetRPCClient, Hummingbird, swift-prometheus, CCrypt (crypt(3), libxcrypt)
//   blefleetd → FleetHistory (every reading kept: SQLite through vapor/sqlite-nio)
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "blefleet",
    products: [],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        // blefleet-web only: the HTTP server (no default traits: no swift-configuration, no
        // full Foundation) and the Prometheus text format.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // MARK: C libraries (Debian -dev packages)
        .systemLibrary(
            name: "CDBus",
            path: "Sources/CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .systemLibrary(
            name: "CSystemd",
            path: "Sources/CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // Headers only (libmosquitto-dev): the MQTT module opens libmosquitto with dlopen
        // when a client is made, so neither blectl nor blefleetd links it (nor, through it,
        // libssl and libcrypto); pkg-config would add -lmosquitto.
        .systemLibrary(
            name: "CMosquitto",
            path: "Sources/CMosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),

        // crypt(3) from libxcrypt (libcrypt-dev): blefleet-web checks passwords against the
        // hashes of its --auth-file.
        .systemLibrary(
            name: "CCrypt",
            path: "Sources/CCrypt",
            providers: [.apt(["libcrypt-dev"])]
        ),

        // MARK: Libraries
        .target(
            name: "DBus",
            dependencies: [
                "CDBus",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Systemd",
            dependencies: [
                "CSystemd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "MQTT",
            dependencies: [
                "CMosquitto",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "BlueZ",
            dependencies: [
                "DBus",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetModel",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetCore",
            dependencies: [
                "FleetModel", "BlueZ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The fleet's core in a deterministic simulation: a simulated radio (a BlueZBus) and
        // clock, seeded classrooms with faults, a referee of the fleet's promises.
        .target(
            name: "FleetSimulation",
            dependencies: [
                "FleetCore", "FleetModel", "BlueZ", "DBus",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "JSONRPC",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetRPC",
            dependencies: ["FleetModel", "JSONRPC"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetMQTT",
            dependencies: [
                "FleetRPCClient", "FleetRPC", "FleetModel", "JSONRPC", "MQTT", "FleetMQTTSettings",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetMQTTSettings",
            dependencies: [.product(name: "Yams", package: "Yams")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetWeb",
            dependencies: [
                "FleetRPCClient", "FleetRPC", "FleetModel", "JSONRPC", "CCrypt",
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Dashboard"],
            swiftSettings: swiftSettings,
            plugins: ["EmbedDashboard"]
        ),
        .executableTarget(name: "EmbedFiles", path: "Sources/EmbedFiles"),
        .plugin(name: "EmbedDashboard", capability: .buildTool(), dependencies: ["EmbedFiles"]),
        .target(
            name: "ClientCommandLine",
            dependencies: [
                "Systemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetWire",
            dependencies: ["FleetCore", "FleetRPC", "JSONRPC"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetHistory",
            dependencies: [
                "FleetModel",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FleetRPCServer",
            dependencies: [
                "FleetRPC", "JSONRPC", "FleetModel",
                "FleetCore",
                "FleetWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "FleetRPCClient",
            dependencies: ["FleetRPC", "JSONRPC"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "BlectlCore",
            dependencies: ["FleetRPCClient", "FleetRPC", "JSONRPC"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "blectl",
            dependencies: [
                "BlectlCore", "FleetRPCClient", "FleetRPC", "JSONRPC", "MQTT",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "BlefleetDaemon",
            dependencies: [
                "FleetRPCServer", "FleetCore", "FleetMQTTSettings", "FleetHistory", "Systemd",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Benchmarks
        .executableTarget(
            name: "dbus-bench",
            dependencies: ["DBus", "CDBus"],
            path: "Benchmarks/DBusBench",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "async-echo",
            dependencies: [
                "FleetRPC", "JSONRPC",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
            ],
            path: "Benchmarks/AsyncEcho",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "json-bench",
            dependencies: ["FleetRPC", "JSONRPC"],
            path: "Benchmarks/JSONBench",
            swiftSettings: swiftSettings
        ),

        // MARK: Executables
        .executableTarget(
            name: "blefleetd",
            dependencies: [
                "BlefleetDaemon", "Systemd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "blefleet-sim",
            dependencies: [
                "FleetSimulation",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "blefleet-mqtt",
            dependencies: [
                "FleetMQTT", "FleetMQTTSettings", "FleetRPCClient", "ClientCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/blefleet-mqtt",
            swiftSettings: swiftSettings
        ),

        .executableTarget(
            name: "blefleet-web",
            dependencies: [
                "FleetWeb", "FleetRPCClient", "ClientCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/blefleet-web",
            swiftSettings: swiftSettings
        ),

        // MARK: Test support (starts a testbed; used by integration tests only)
        .target(
            name: "TestSupport",
            dependencies: ["JSONRPC"],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),

        // MARK: Test fixtures (executables the tests run in a controlled environment)
        .executableTarget(
            name: "systemd-probe",
            dependencies: [
                "Systemd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/Fixtures/SystemdProbe",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "registry-writer",
            dependencies: ["FleetCore"],
            path: "Tests/Fixtures/RegistryWriter",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "mqtt-will-probe",
            dependencies: ["MQTT"],
            path: "Tests/Fixtures/MQTTWillProbe",
            swiftSettings: swiftSettings
        ),

        // MARK: Tests
        .testTarget(
            name: "DBusTests",
            dependencies: ["DBus", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SystemdTests",
            dependencies: [
                "Systemd", "TestSupport", "systemd-probe",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MQTTTests",
            dependencies: ["MQTT", "TestSupport", "mqtt-will-probe"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BlueZTests",
            dependencies: ["BlueZ", "DBus", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FleetCoreTests",
            dependencies: [
                "FleetCore", "BlueZ", "DBus", "TestSupport", "registry-writer", "FleetSimulation", "blefleet-sim",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BlefleetDaemonTests",
            dependencies: ["BlefleetDaemon", "FleetMQTTSettings"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FleetHistoryTests",
            dependencies: ["FleetHistory", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FleetWebTests",
            dependencies: [
                "FleetWeb", "JSONRPC", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FleetMQTTTests",
            dependencies: ["FleetMQTT"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FleetRPCTests",
            dependencies: ["FleetRPC", "JSONRPC"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FleetRPCClientTests",
            dependencies: ["FleetRPCClient", "FleetRPC", "JSONRPC", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BlectlCoreTests",
            dependencies: ["BlectlCore", "FleetRPCClient", "FleetRPC", "JSONRPC"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "blectlTests",
            dependencies: ["blectl", "blefleetd", "FleetRPC", "JSONRPC", "FleetRPCClient", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ManPageTests",
            dependencies: ["FleetRPC", "JSONRPC", "BlefleetDaemon", "Systemd", "TestSupport", "FleetModel", "FleetWeb", "blefleet-web"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FleetRPCServerTests",
            dependencies: [
                "FleetRPCServer", "FleetRPC", "JSONRPC", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
