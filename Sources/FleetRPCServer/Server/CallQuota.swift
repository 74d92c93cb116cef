import FleetRPC
import JSONRPC

/// The calls in flight on every connection together: per user (uid), and for the whole
/// daemon with a reserve only control callers may use.
///
/// A user other than root has at most ``perUserLimit`` calls in flight across all its
/// connections (`max-calls-per-user`): more connections buy no more calls. The daemon runs
/// at most ``totalLimit`` calls at once (`max-calls-in-flight`); a read-only caller's call is
/// refused once ``readOnlyLimit`` are in flight (all roles counted), so the last
/// ``reservedForControl`` places (`reserved-control-calls`) are always free for the fleet's
/// control users: whatever read-only accounts queue, a teacher's `led.set` is admitted.
///
/// A plain value: the server keeps one behind a lock and every connection asks it.
struct CallQuota: Sendable, Hashable {
    let perUserLimit: Int
    let totalLimit: Int
    let reservedForControl: Int
    private(set) var inFlight = 0
    private var byUser: [UInt32: Int] = [:]

    init(perUserLimit: Int, totalLimit: Int, reservedForControl: Int) {
        self.perUserLimit = max(1, perUserLimit)
        self.totalLimit = max(1, totalLimit)
        self.reservedForControl = min(max(0, reservedForControl), self.totalLimit - 1)
    }

    /// The calls in flight that read-only callers may add to.
    var readOnlyLimit: Int { totalLimit - reservedForControl }

    /// The calls of `uid` in flight now.
    func inFlight(of uid: UInt32) -> Int { byUser[uid, default: 0] }

    /// `calls` calls of `uid`, whose role is `role`, want to run: how many may (the first
    /// ones), and the refusal for the rest.
    mutating func take(_ calls: Int, uid: UInt32, role: AccessRole) -> CallAdmission.Decision {
        var room = (role == .control ? totalLimit : readOnlyLimit) - inFlight
        var refusal: RPCError
        if role == .control {
            refusal = RPCError(
                .busy,
                "Busy: blefleetd has \(totalLimit) calls in flight, the most it runs at once (max-calls-in-flight); "
                    + "try again when some have answered.")
        } else {
            refusal = RPCError(
                .busy,
                "Busy: blefleetd has \(readOnlyLimit) calls in flight, all it runs for read-only callers; the other "
                    + "\(reservedForControl) are kept for control users (reserved-control-calls). Try again shortly.")
        }
        if uid != 0, perUserLimit - inFlight(of: uid) < room {
            room = perUserLimit - inFlight(of: uid)
            refusal = RPCError(
                .busy,
                "Busy: uid \(uid) has \(perUserLimit) calls in flight on its connections, the most one user may "
                    + "(max-calls-per-user); wait for replies.")
        }
        let admitted = max(0, min(calls, room))
        if admitted > 0 {
            inFlight += admitted
            byUser[uid, default: 0] += admitted
        }
        return CallAdmission.Decision(admitted: admitted, refusal: admitted < calls ? refusal : nil)
    }

    /// `calls` calls of `uid` that ``take(_:uid:role:)`` let run have answered.
    mutating func give(_ calls: Int, uid: UInt32) {
        precondition(calls >= 0 && inFlight(of: uid) >= calls, "calls finished that were never taken")
        guard calls > 0 else { return }
        inFlight -= calls
        byUser[uid, default: 0] -= calls
        if byUser[uid] == 0 { byUser[uid] = nil }
    }
}
