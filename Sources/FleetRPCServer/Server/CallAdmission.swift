import FleetRPC
import JSONRPC

/// How many calls one connection may have running at once
/// (``RPCServerConfiguration/maxCallsInFlightPerConnection``), and the refusal beyond that.
///
/// A call holds its place until its reply is written, so a client that does not read its
/// replies has its next calls refused as busy instead of buffered.
struct CallAdmission: Sendable, Hashable {
    let limit: Int
    private(set) var inFlight = 0

    init(limit: Int) {
        self.limit = limit
    }

    enum Decision: Sendable, Hashable {
        case admitted
        /// Answer every request of the frame with this error (`-32004`), running nothing.
        case refused(RPCError)
    }

    /// A frame of calls arrived: run it, or refuse it when `limit` are already running.
    mutating func admit() -> Decision {
        guard inFlight < limit else {
            return .refused(
                RPCError(
                    .busy,
                    "Busy: this connection already has \(limit) calls in flight; wait for replies or use another connection."))
        }
        inFlight += 1
        return .admitted
    }

    /// An admitted frame has answered (or needed no answer).
    mutating func finished() {
        precondition(inFlight > 0, "a call finished that was never admitted")
        inFlight -= 1
    }
}
