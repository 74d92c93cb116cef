/// Parameters of `gatt.write`; exactly one of `select` and `address` is given.
public struct GattWriteParams: Sendable, Hashable, Codable {
    /// The boards to write to.
    public var select: Selection?
    /// One board's address.
    public var address: String?
    /// Service UUID.
    public var service: String
    /// Characteristic UUID.
    public var characteristic: String
    /// The bytes to write, as hex.
    public var value: String
    /// Write with response (default true).
    public var withResponse: Bool?

    public init(select: Selection? = nil, address: String? = nil, service: String, characteristic: String, value: String, withResponse: Bool? = nil) {
        self.select = select
        self.address = address
        self.service = service
        self.characteristic = characteristic
        self.value = value
        self.withResponse = withResponse
    }
}
