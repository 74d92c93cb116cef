public import FleetRPC
import Glibc
public import Hummingbird
import Synchronization

/// Without `--auth-file`, what a local account may do through blefleet-web: exactly what the
/// daemon's socket gives it, never more. Root and the account blefleet-web runs as (which uses
/// the socket itself) control; a member of the daemon's control group (`socket-group`)
/// controls; a member of its read-only group looks; every other account is refused, as the
/// socket refuses it. The groups are the daemon's own (`daemon.status` tells them), each
/// account's membership NSS's, looked up again after ``lifetime``: an account taken out of a
/// group loses its role here within that time, as on the socket.
public final class LocalRoles: Sendable {
    /// What a request from a local account gets.
    public enum Outcome: Sendable, Equatable {
        case user(WebUser)
        /// Refused, with the HTTP status and the sentence to answer.
        case refused(HTTPResponse.Status, String)
    }

    /// How long an account's groups are reused before NSS is asked again.
    public let lifetime: Duration
    let ownUID: UInt32
    private let groupsOf: @Sendable (UInt32) -> Set<UInt32>?
    private let groupID: @Sendable (String) -> UInt32?
    private let cache = Mutex<[UInt32: (groups: Set<UInt32>?, expires: ContinuousClock.Instant)]>([:])

    public init(
        ownUID: UInt32? = nil, lifetime: Duration = .seconds(5),
        groupsOf: (@Sendable (UInt32) -> Set<UInt32>?)? = nil, groupID: (@Sendable (String) -> UInt32?)? = nil
    ) {
        self.ownUID = ownUID ?? getuid()
        self.lifetime = lifetime
        self.groupsOf = groupsOf ?? { LocalAccounts.groups(uid: $0) }
        self.groupID = groupID ?? { LocalAccounts.groupID(named: $0) }
    }

    /// The outcome for the account `uid` (`nil`: the kernel lists no open socket at the other
    /// end), given the daemon's groups (`nil`: the daemon has not told them yet).
    public func resolve(uid: UInt32?, access: DaemonStatus.Access?, now: ContinuousClock.Instant = .now) -> Outcome {
        guard let uid else {
            return .refused(
                .forbidden,
                "blefleet-web cannot tell which local account sent this request: the kernel lists no open socket at the "
                    + "other end of its connection (one closed before its request was read belongs to nobody). "
                    + "Keep the connection open until the answer comes.")
        }
        let name = LocalAccounts.name(uid: uid).map { "\($0) (uid \(uid))" } ?? "uid \(uid)"
        if uid == 0 || uid == ownUID { return .user(WebUser(name: name, role: .control)) }
        guard let access else {
            return .refused(
                .serviceUnavailable,
                "blefleet-web has not heard from blefleetd yet which groups it serves, so it cannot tell what \(name) "
                    + "may do; try again once the daemon answers.")
        }
        let groups = groups(of: uid, now: now) ?? []
        if let control = groupID(access.controlGroup), groups.contains(control) {
            return .user(WebUser(name: name, role: .control))
        }
        if let readOnly = access.readOnlyGroup, let gid = groupID(readOnly), groups.contains(gid) {
            return .user(WebUser(name: name, role: .readOnly))
        }
        let join = access.readOnlyGroup.map { "join '\($0)' to look or '\(access.controlGroup)' to switch" }
            ?? "join '\(access.controlGroup)'"
        return .refused(
            .forbidden,
            "\(name) is not in blefleetd's groups, so its socket gives it nothing and neither does blefleet-web; \(join).")
    }

    private func groups(of uid: UInt32, now: ContinuousClock.Instant) -> Set<UInt32>? {
        if let cached = cache.withLock({ $0[uid] }), cached.expires > now { return cached.groups }
        let groups = groupsOf(uid)
        cache.withLock {
            if $0.count >= 1024 { $0 = $0.filter { $0.value.expires > now } }
            $0[uid] = (groups, now.advanced(by: lifetime))
        }
        return groups
    }
}
