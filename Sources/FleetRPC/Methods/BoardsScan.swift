public import JSONRPC

extension FleetMethods {
    /// `boards.scan`.
    public enum BoardsScan: RPCMethod {
        public static let descriptor = RPCMethodDescriptor(
            name: "boards.scan",
            summary: "Scan for boards for a number of seconds and return every board seen.",
            params: [RPCParamDescriptor("seconds", .number(minimum: 0.1, maximum: 300), required: true, "How long to scan.")],
            result: RPCResultDescriptor("boards", "The boards seen, sorted by address.", schema: Schemas.boardList),
            access: .write,
            errors: [.permissionDenied, .adapterUnavailable, .bluezUnavailable, .busy, .timeout])

        public struct Params: RPCMethodParams, Codable, Hashable {
            /// How long to scan.
            public var seconds: Double

            public init(seconds: Double) {
                self.seconds = seconds
            }
        }
        public typealias Result = BoardsListResult
    }
}
