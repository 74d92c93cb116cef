/// Who is on the other end of a Unix socket connection, as the kernel reports it: its pid, uid
/// and gid (`SO_PEERCRED`) and its supplementary groups (`SO_PEERGROUPS`, Linux 4.13), all as
/// they were when it connected.
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// The process's supplementary groups. A user systemd makes up for a unit
    /// (`DynamicUser=yes`) has its `SupplementaryGroups=` here and nowhere in NSS.
    public var groups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    public var description: String {
        "pid \(pid), uid \(uid), gid \(gid)" + (groups.isEmpty ? "" : ", groups \(groups.map(String.init).joined(separator: ","))")
    }
}
