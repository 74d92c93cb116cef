import Glibc

/// This machine's accounts and groups as NSS tells them (`/etc/passwd`, `/etc/group` and
/// whatever `nsswitch.conf` adds): where the daemon's socket and blefleet-web look up the
/// groups that give a local account its role.
/// Each call may wait on a directory service: call it where blocking a while is acceptable.
public enum LocalAccounts {
    /// The login name of `uid`, if NSS knows it.
    public static func name(uid: UInt32) -> String? {
        withPasswd(uid) { entry in
            entry.pw_name.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) }
        } ?? nil
    }

    /// The primary and supplementary groups of `uid`; `nil` if NSS has no such user (a
    /// unit's `DynamicUser=` account, whose groups only its processes carry).
    public static func groups(uid: UInt32) -> Set<UInt32>? {
        withPasswd(uid) { entry -> Set<UInt32> in
            let primary = entry.pw_gid
            guard let name = entry.pw_name else { return [primary] }
            var count: Int32 = 64
            while true {
                var groups = [gid_t](repeating: 0, count: Int(count))
                var found = count
                if getgrouplist(name, primary, &groups, &found) >= 0 {
                    return Set(groups.prefix(Int(found))).union([primary])
                }
                guard found > count, found < 65_536 else { return [primary] }
                count = found
            }
        }
    }

    /// The gid of the group called `name`, if it exists.
    public static func groupID(named name: String) -> UInt32? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 65_536)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    private static func withPasswd<T>(_ uid: UInt32, _ body: (passwd) -> T) -> T? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return body(entry)
    }
}
