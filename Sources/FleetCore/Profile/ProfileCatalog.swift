import BlueZ

/// The profiles the fleet knows: the built-in one and those of files. A board is the kind
/// whose advertised service it offers; a file's profile for the same service as the
/// built-in one replaces it (a lab's sketch that adds to the Nano's).
public struct ProfileCatalog: Sendable, Hashable {
    /// Every profile in effect, files first, then the built-in one unless replaced.
    public let profiles: [BoardProfile]

    /// `files`: the profiles read from files; two for the same service are the caller's
    /// error to refuse (``conflicts(_:)``), here the first wins.
    public init(files: [BoardProfile] = []) {
        var seen: Set<GattUUID> = []
        var profiles: [BoardProfile] = []
        for profile in files + [BoardProfile.nano] where seen.insert(profile.advertisedService).inserted {
            profiles.append(profile)
        }
        self.profiles = profiles
    }

    public static let builtIn = ProfileCatalog()

    /// Profiles of `files` that claim a service an earlier one claims: (later, earlier).
    public static func conflicts(_ files: [BoardProfile]) -> [(BoardProfile, BoardProfile)] {
        var first: [GattUUID: BoardProfile] = [:]
        var found: [(BoardProfile, BoardProfile)] = []
        for profile in files {
            if let earlier = first[profile.advertisedService] {
                found.append((profile, earlier))
            } else {
                first[profile.advertisedService] = profile
            }
        }
        return found
    }

    /// The services boards advertise: what discovery filters on.
    public var advertisedServices: [GattUUID] { profiles.map(\.advertisedService) }

    /// The profile of a board offering `services` (advertised, or resolved), if any.
    func profile(offering services: [BluetoothUUID]) -> BoardProfile? {
        profiles.first { services.contains($0.advertisedService.bluetooth) }
    }

    /// Whether a device offering `services` is a board of a known kind.
    func recognises(_ services: [BluetoothUUID]) -> Bool { profile(offering: services) != nil }

    public func profile(named name: String) -> BoardProfile? { profiles.first { $0.name == name } }

    /// Every sensor name some profile has, sorted.
    public var sensorNames: [String] { Set(profiles.flatMap { $0.sensors.map(\.name) }).sorted() }
    /// Every switch name some profile has, sorted.
    public var switchNames: [String] { Set(profiles.flatMap { $0.switches.map(\.name) }).sorted() }
}
