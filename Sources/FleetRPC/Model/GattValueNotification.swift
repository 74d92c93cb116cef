/// The params of a `gatt.value` server→client notification: one value a board notified on
/// a characteristic this connection subscribed to with `gatt.notify`.
public struct GattValueNotification: FleetNotification, Hashable {
    /// The JSON-RPC method name of these notifications.
    public static let method = "gatt.value"

    public var address: String
    public var name: String
    public var service: String
    public var characteristic: String
    /// The bytes notified, as lowercase hex.
    public var value: String
    /// When it arrived, ISO 8601 UTC.
    public var time: String
    /// Values of this subscription lost just before this one: the client read too slowly and
    /// the oldest waiting were dropped. Absent when none were.
    public var dropped: Int?

    public init(
        address: String, name: String, service: String, characteristic: String, value: String, time: String,
        dropped: Int? = nil
    ) {
        (self.address, self.name, self.service, self.characteristic, self.value) = (address, name, service, characteristic, value)
        (self.time, self.dropped) = (time, dropped)
    }
}
