/// Parameters of `boards.connect`, `boards.disconnect` and `boards.forget`.
public import JSONRPC

public struct BoardSelectParams: RPCMethodParams, Hashable {
    /// The boards to act on.
    public var select: Selection

    public init(select: Selection) {
        self.select = select
    }

    public init(checked params: RPCCheckedParams) throws(RPCError) {
        self.init(select: try params.selection("select"))
    }
}
