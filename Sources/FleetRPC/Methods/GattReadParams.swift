/// Parameters of `gatt.read`; exactly one of `select` and `address` is given.
public struct GattReadParams: Sendable, Hashable, Codable {
    /// The boards to read.
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
