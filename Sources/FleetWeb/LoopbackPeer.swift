import Glibc
public import NIOCore

/// Who opened a loopback connection, as the kernel knows it. Without `--auth-file`
/// blefleet-web serves this machine only, and tells its users apart as identd does: the kernel
/// lists every TCP socket with its owner's uid and its inode (`/proc/net/tcp`,
/// `/proc/net/tcp6`), and the client's end of a loopback connection is the line whose local
/// address is the request's remote one and whose remote address is blefleet-web's own.
///
/// The uid is taken only while the client's socket is still an open file (its inode is not 0):
/// a socket its owner has closed is no one's, and the kernel lists it as root's (uid 0, inode 0:
/// an orphan, or a connection in TIME_WAIT). A request whose sender closed before it was read
/// therefore belongs to nobody, whatever the timing, and is refused.
public enum LoopbackPeer {
    /// The uid owning the other end of the connection from `remote` to `local`, if the kernel
    /// lists it there as a socket some process still holds open (`table` reads a file;
    /// tests give their own lines).
    public static func uid(
        remote: SocketAddress, local: SocketAddress, table: (String) -> String? = { readFile($0) }
    ) -> UInt32? {
        guard let theirs = key(remote), let ours = key(local) else { return nil }
        let file: String
        switch remote {
        case .v4: file = "/proc/net/tcp"
        case .v6: file = "/proc/net/tcp6"
        default: return nil
        }
        guard let text = table(file) else { return nil }
        for line in text.split(separator: "\n").dropFirst() {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, fields[1].uppercased() == theirs, fields[2].uppercased() == ours else { continue }
            // TIME_WAIT (06) and closed (07) ends, and any end with no file, are no one's.
            guard fields[3] != "06", fields[3] != "07", let inode = UInt64(fields[9]), inode != 0 else { return nil }
            return UInt32(fields[7])
        }
        return nil
    }

    /// An address as the kernel prints it there: each 32-bit word of the address as the
    /// machine stores it, in hex, then the port in hex (`0100007F:1F25` for 127.0.0.1:8005
    /// on a little-endian machine).
    static func key(_ address: SocketAddress) -> String? {
        guard let port = address.port else { return nil }
        func hex(_ word: UInt32) -> String {
            let digits = String(word, radix: 16, uppercase: true)
            return String(repeating: "0", count: 8 - digits.count) + digits
        }
        let portHex = String(port, radix: 16, uppercase: true)
        let portText = String(repeating: "0", count: max(0, 4 - portHex.count)) + portHex
        switch address {
        case .v4(let v4):
            return hex(v4.address.sin_addr.s_addr) + ":" + portText
        case .v6(let v6):
            var words = ""
            withUnsafeBytes(of: v6.address.sin6_addr) { bytes in
                for index in 0..<4 {
                    words += hex(bytes.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
                }
            }
            return words + ":" + portText
        default:
            return nil
        }
    }

    /// The whole of a `/proc` file. (Foundation's `String(contentsOfFile:)` reads a file the
    /// kernel says is empty once, and `/proc/net/tcp` hands out one page per read: the lines
    /// past the first 4 KiB were missing.)
    public static func readFile(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            data += chunk.prefix(count)
        }
        return String(decoding: data, as: UTF8.self)
    }
}
