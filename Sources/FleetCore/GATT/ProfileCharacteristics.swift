import BlueZ

extension BlueZObjectMirror {
    /// How long a resolved board's characteristics may take to show in the mirror.
    static let handlesWait: Duration = .seconds(3)

    /// The characteristics of `profile` under `device`, by name, once the mirror shows them
    /// all (BlueZ exports them with the resolve, but the mirror may see the resolve first),
    /// or those it shows after ``handlesWait`` or when the link goes.
    nonisolated func characteristics(of profile: BoardProfile, on device: BlueZDevice) async -> [String: BlueZCharacteristic] {
        let path = device.path
        @Sendable func lookUp(_ tree: BlueZObjectTree) -> [String: BlueZCharacteristic] {
            var found: [String: BlueZCharacteristic] = [:]
            for wanted in profile.characteristics {
                found[wanted.name] = tree.characteristic(
                    device: path, service: wanted.service.bluetooth, characteristic: wanted.uuid.bluetooth)
            }
            return found
        }
        _ = try? await wait(timeout: Self.handlesWait, description: "the characteristics of \(device.address)", watching: path.rawValue) {
            snapshot -> MirrorWaitStep<Bool> in
            guard snapshot.tree.hasLink(at: path) == true else { return .done(false) }
            return lookUp(snapshot.tree).count == profile.characteristics.count ? .done(true) : .pending
        }
        return lookUp(await tree)
    }
}
