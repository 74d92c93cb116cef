import FleetModel
import FleetRPC
public import JSONRPC
import Glibc
import NIOConcurrencyHelpers

/// Decides what a peer may call. Root and members of the control group may call every
/// method; members of the read-only group may call `.read` methods; everyone else is
/// refused with `-32000` and a message naming the group to join. Membership is what NSS says
/// now: the uid's primary group plus its supplementary groups (`getgrouplist`). Only a uid NSS
/// does not know (a unit's `DynamicUser=`, whose `SupplementaryGroups=` are nowhere in NSS)
/// is judged by the gid and the groups its process connected with (`SO_PEERGROUPS`): for a
/// known user those are a snapshot from connect time, and would keep a user removed from the
/// group in control for as long as the connection stays open. The role is cached for
/// ``Configuration/cacheLifetime`` and every call asks for it again, so a removal ends the
/// user's control on open connections within that lifetime.
public final class AccessPolicy: Sendable {
    public struct Configuration: Sendable {
        /// Members may call every method.
        public var controlGroup: String
        /// Members may call read methods; `nil` for no read-only access.
        public var readOnlyGroup: String?
        /// How long a peer's role (from its uid's groups) is reused.
        public var cacheLifetime: Duration

        public init(controlGroup: String = "blefleet", readOnlyGroup: String? = "blefleet-ro", cacheLifetime: Duration = .seconds(5)) {
            self.controlGroup = controlGroup
            self.readOnlyGroup = readOnlyGroup
            self.cacheLifetime = cacheLifetime
        }
    }

    private struct CachedRole {
        var role: AccessRole
        var expires: ContinuousClock.Instant
    }

    public let configuration: Configuration
    /// Roles by uid, gid and the groups the peer connected with, for
    /// ``Configuration/cacheLifetime``: a call costs no user or group lookup.
    private let roles = NIOLockedValueBox<[CacheKey: CachedRole]>([:])

    private struct CacheKey: Hashable {
        var uid: UInt32
        var gid: UInt32
        var groups: [UInt32]
    }

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The role of a peer. A lookup (on a cache miss) asks NSS, which may wait on a directory
    /// service: call it where blocking a while is acceptable, not on an event loop.
    public func role(for credentials: PeerCredentials) -> AccessRole {
        let now = ContinuousClock.now
        if let role = cachedRole(for: credentials, now: now) { return role }
        let role = lookUpRole(for: credentials)
        roles.withLockedValue {
            $0[Self.key(credentials)] = CachedRole(role: role, expires: now.advanced(by: configuration.cacheLifetime))
        }
        return role
    }

    /// The role of a peer if it is known without a lookup (root, or cached).
    public func cachedRole(for credentials: PeerCredentials, now: ContinuousClock.Instant = .now) -> AccessRole? {
        if credentials.uid == 0 { return .control }
        guard let cached = roles.withLockedValue({ $0[Self.key(credentials)] }), cached.expires > now else { return nil }
        return cached.role
    }

    private static func key(_ credentials: PeerCredentials) -> CacheKey {
        CacheKey(uid: credentials.uid, gid: credentials.gid, groups: credentials.groups)
    }

    private func lookUpRole(for credentials: PeerCredentials) -> AccessRole {
        let groups = LocalAccounts.groups(uid: credentials.uid) ?? Set(credentials.groups).union([credentials.gid])
        if let control = LocalAccounts.groupID(named: configuration.controlGroup), groups.contains(control) {
            return .control
        }
        if let name = configuration.readOnlyGroup, let readOnly = LocalAccounts.groupID(named: name), groups.contains(readOnly) {
            return .readOnly
        }
        return .none
    }

    /// `nil` if `role` may call `method`, else the `-32000` error to answer with.
    public func refusal(for method: RPCMethodDescriptor, role: AccessRole, credentials: PeerCredentials) -> RPCError? {
        switch (role, method.access) {
        case (.control, _), (.readOnly, .read):
            return nil
        case (.readOnly, .write):
            return RPCError(
                .permissionDenied,
                "Permission denied: \(method.name) changes state and uid \(credentials.uid) may only read "
                    + "(group '\(configuration.readOnlyGroup ?? "")'); join the group '\(configuration.controlGroup)' to call it.")
        case (.none, _):
            var message =
                "Permission denied: uid \(credentials.uid) may not call \(method.name); join the group '\(configuration.controlGroup)'"
            if let readOnly = configuration.readOnlyGroup {
                message += method.access == .read ? " or '\(readOnly)'" : " (or '\(readOnly)' to read only)"
            }
            return RPCError(.permissionDenied, message + ".")
        }
    }
}
