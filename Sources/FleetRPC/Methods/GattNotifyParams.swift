/// Parameters of `gatt.notify`; exactly one of `select` and `address` is given.
public struct GattNotifyParams: Sendable, Hashable, Codable {
    /// The boards to listen to.
    public var select: Selection?
    /// One board's address.
    public var address: String?
    /// Service UUID.
    public var service: String
    /// Characteristic UUID.
    public var characteristic: String

    public init(select: Selection? = nil, address: String? = nil, service: String, characteristic: String) {
        self.select = select
        self.address = address
        self.service = service
        self.characteristic = characteristic
    }
}
