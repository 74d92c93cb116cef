/// A kind of board, declared once: the service it advertises (how the fleet finds and
/// recognises it) and its characteristics, each a *switch* (like the Nano sketch's LED)
/// or a *sensor* (like its temperature). The built-in profile is ``nano``; a lab adds its
/// own sketch as a file (`blefleet-profile(5)`).
public struct BoardProfile: Sendable, Hashable {
    /// What a characteristic is to a user.
    public enum Role: String, Sendable, Hashable {
        /// Written on or off (the LED).
        case `switch`
        /// Read, and followed by notifications where the board offers them (the temperature).
        case sensor
    }

    /// What the board lets a central do with a characteristic.
    public enum Access: String, Sendable, Hashable, CaseIterable {
        case read, write, notify
    }

    /// One switch or sensor.
    public struct Characteristic: Sendable, Hashable {
        /// How callers name it (`blectl read humidity`, the MQTT topic): lower case.
        public let name: String
        public let role: Role
        public let service: GattUUID
        public let uuid: GattUUID
        public let format: ValueFormat
        /// The value is the decoded number times this (0.01 for hundredths).
        public let scale: Double
        /// The unit of the scaled value (`°C`, `%`), if any.
        public let unit: String?
        public let access: Set<Access>
        /// Home Assistant's device class (`temperature`, `humidity`…), if any.
        public let deviceClass: String?

        public init(
            name: String, role: Role, service: GattUUID, uuid: GattUUID, format: ValueFormat, scale: Double = 1,
            unit: String? = nil, access: Set<Access>, deviceClass: String? = nil
        ) {
            self.name = name
            self.role = role
            self.service = service
            self.uuid = uuid
            self.format = format
            self.scale = scale
            self.unit = unit
            self.access = access
            self.deviceClass = deviceClass
        }

        /// How many decimals a value carries: those its scale implies for a whole-number
        /// format (`0.1` one, `0.01` two, `0.25` two, `1` or `10` none); nil for `float32`
        /// (the float's own digits) and for a scale of more than 9 decimals.
        public var decimals: Int? {
            guard format != .float32 else { return nil }
            var power = 1.0
            for decimals in 0...9 {
                let scaled = scale * power
                if abs(scaled.rounded() - scaled) <= 1e-9 * max(1, abs(scaled)) { return decimals }
                power *= 10
            }
            return nil
        }

        /// The value in `bytes`, scaled; nil when the bytes do not fit the format. A
        /// whole-number format's value is exact to its ``decimals`` (10013 at scale 0.1 is
        /// 1001.3, the double nearest it, not 10013 × 0.1 = 1001.3000000000001), so it reads
        /// as the profile says on the wire, in tables, the history and its CSV.
        public func decode(_ bytes: [UInt8]) -> Double? {
            guard let raw = format.decode(bytes) else { return nil }
            guard let decimals else { return raw * scale }
            let power = (0..<decimals).reduce(1.0) { power, _ in power * 10 }
            return raw * (scale * power).rounded() / power
        }

        /// The bytes of a switch's position: 1 for on, 0 for off, in its format.
        public func encode(on: Bool) -> [UInt8] {
            format.encode(on ? 1 : 0) ?? [on ? 1 : 0]
        }

        /// `read, notify`
        public var accessText: String { Access.allCases.filter(access.contains).map(\.rawValue).joined(separator: ", ") }
    }

    /// The profile's name (the file's `name`; `nano` for the built-in one).
    public let name: String
    /// The service the boards advertise: the discovery filter, adoption, and matching.
    public let advertisedService: GattUUID
    /// Switches and sensors, in the order declared.
    public let characteristics: [Characteristic]
    /// Where it was declared: `built-in`, or the file's path.
    public let source: String

    public init(name: String, advertisedService: GattUUID, characteristics: [Characteristic], source: String) {
        self.name = name
        self.advertisedService = advertisedService
        self.characteristics = characteristics
        self.source = source
    }

    public var sensors: [Characteristic] { characteristics.filter { $0.role == .sensor } }
    public var switches: [Characteristic] { characteristics.filter { $0.role == .switch } }

    public func sensor(named name: String) -> Characteristic? { sensors.first { $0.name == name } }
    public func `switch`(named name: String) -> Characteristic? { switches.first { $0.name == name } }

    /// Its LED: the switch ``ledSwitch``, which `led.set` names and a board keeps as its user
    /// wants it; nil when the profile has none.
    public var led: Characteristic? { self.switch(named: Self.ledSwitch) }

    /// Whether `text` may name a switch or sensor: a lower-case letter, then lower-case
    /// letters, digits, `_` or `-` (at most 32): it appears in MQTT topics and commands.
    public static func isValidName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, ("a"..."z").contains(first), text.unicodeScalars.count <= 32 else {
            return false
        }
        return text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }
    }
}

extension BoardProfile {
    /// The Nano 33 BLE Sense LED + temperature sketch (shared/BOARD-PROFILE.md): the
    /// built-in profile, whose switch `led` and sensor `temperature` are what `led.set` and
    /// `temperature.read` name.
    public static let nano: BoardProfile = {
        let ledService = GattUUID("cd48409a-f3cc-11ed-a05b-0242ac120003")!
        let sensorService = GattUUID("d888a9c2-f3cc-11ed-a05b-0242ac120003")!
        return BoardProfile(
            name: "nano", advertisedService: ledService,
            characteristics: [
                // Write-only, with response: one byte, 0x00 off, anything else on.
                Characteristic(
                    name: ledSwitch, role: .switch, service: ledService,
                    uuid: GattUUID("cd48409b-f3cc-11ed-a05b-0242ac120003")!, format: .uint8, access: [.write]),
                // Read + notify: one signed byte, whole degrees Celsius.
                Characteristic(
                    name: temperatureSensor, role: .sensor, service: sensorService,
                    uuid: GattUUID("d888a9c3-f3cc-11ed-a05b-0242ac120003")!, format: .sint8, unit: "°C",
                    access: [.read, .notify], deviceClass: "temperature"),
            ],
            source: "built-in")
    }()

    /// The switch `led.set` names.
    public static let ledSwitch = "led"
    /// The sensor `temperature.read` names.
    public static let temperatureSensor = TemperatureReading.sensor
}
