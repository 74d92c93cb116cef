import FleetRPC
import JSONRPC

/// How many calls one connection may have running at once
/// (``RPCServerConfiguration/maxCallsInFlightPerConnection``), and the refusal beyond that.
///
/// Every call counts, a batch's items each as one: a batch of 2,000 calls is 2,000 calls in
/// flight, not one frame. A frame's calls hold their places until its reply is written, so a
/// client that does not read its replies has its next calls refused as busy instead of
/// buffered.
struct CallAdmission: Sendable, Hashable {
    let limit: Int
    private(set) var inFlight = 0

    init(limit: Int) {
        self.limit = limit
    }

    /// How many of the calls of a frame run (the first ones), and what answers the others.
    struct Decision: Sendable, Hashable {
        var admitted: Int
        /// Answers the calls past ``admitted`` (`-32004`); `nil` when every call runs.
        var refusal: RPCError?
    }

    /// A frame of `calls` calls arrived: its first calls run as far as there is room for
    /// them, the rest are refused.
    mutating func admit(_ calls: Int = 1) -> Decision {
        let admitted = max(0, min(calls, limit - inFlight))
        inFlight += admitted
        guard admitted < calls else { return Decision(admitted: admitted, refusal: nil) }
        return Decision(
            admitted: admitted,
            refusal: RPCError(
                .busy,
                "Busy: this connection already has \(limit) calls in flight (max-calls-per-client), a batch's every item "
                    + "counting as one; wait for replies or use another connection."))
    }

    /// `calls` admitted calls have answered (or needed no answer), or were given back.
    mutating func finished(_ calls: Int = 1) {
        precondition(calls >= 0 && inFlight >= calls, "calls finished that were never admitted")
        inFlight -= calls
    }
}
