public import JSONRPC

extension RPCIncoming {
    /// The calls this frame asks to run, as the caps count them: a batch's every item is one
    /// call; a single request, or a frame refused as a whole (answered without running), one.
    public var callCount: Int {
        switch self {
        case .batch(let items): items.count
        case .single, .refused: 1
        }
    }
}
