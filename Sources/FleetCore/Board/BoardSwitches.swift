/// How a board's switches should stand on the board, whatever its links did: the LED as a
/// user last wanted it (saved in the registry), and a switch an identify left mid-blink (its
/// position on the board not known). Every ready link puts them back
/// (``Board/putSwitchesBack(link:)``): the board may have rebooted, its LED off.
///
/// Of a profile's switches only the LED (``BoardProfile/led``) is kept as a user wants it;
/// what sets it apart is said here alone (``isLED(_:)``).
struct BoardSwitches: Sendable, Equatable {
    var desiredLED: DesiredLED
    /// The switch an identify was blinking when it was cut short: put back on the next ready
    /// link, as wanted or off.
    var leftMidBlink: String?

    /// The writes that put `profile`'s switches back: the LED as wanted (when anyone asked),
    /// a switch left mid-blink off (the LED as wanted).
    func writes(for profile: BoardProfile) -> [(item: BoardProfile.Characteristic, on: Bool)] {
        var writes: [(item: BoardProfile.Characteristic, on: Bool)] = []
        if desiredLED != .unknown, let led = profile.led {
            writes.append((led, desiredLED == .on))
        }
        if let name = leftMidBlink, !writes.contains(where: { $0.item.name == name }), let blinked = profile.switch(named: name) {
            writes.append((blinked, false))
        }
        return writes
    }

    /// Whether switch `name` is the LED: the switch kept as its user wants it (saved, put back
    /// on every link), whose writes the board's link and the fleet's events are told of.
    static func isLED(_ name: String) -> Bool { name == BoardProfile.ledSwitch }

    /// Whether switch `name` should stand on: the LED wanted on (any other switch stands off).
    func wantsOn(_ name: String) -> Bool { Self.isLED(name) && desiredLED == .on }

    /// Switch `name` was put back as the board wants it.
    mutating func putBack(_ name: String) {
        if leftMidBlink == name { leftMidBlink = nil }
    }
}
