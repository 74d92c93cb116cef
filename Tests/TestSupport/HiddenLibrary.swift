import Foundation

/// A command prefix that runs a program as on a machine without one shared library.
///
/// In fresh user and mount namespaces (`unshare -Urm`), `/dev/null` is bound over the
/// library's file: the dynamic loader still finds the name but cannot load it ("file too
/// short"), the same failure as a missing package for a program that asks for it. Nothing
/// outside the namespace changes.
public enum HiddenLibrary {
    /// `unshare … sh -c …` to put before a command, hiding `soname` (e.g. `libmosquitto.so.1`),
    /// which `ldconfig -p` must list.
    public static func prefix(hiding soname: String) throws -> [String] {
        let cache = try runCommand("/sbin/ldconfig", ["-p"])
        guard
            let line = cache.split(separator: "\n").first(where: {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix(soname + " ")
            }),
            let arrow = line.range(of: " => ")
        else {
            throw FixtureError("ldconfig -p does not list \(soname)")
        }
        let file = URL(fileURLWithPath: String(line[arrow.upperBound...])).resolvingSymlinksInPath().path
        return [
            "/usr/bin/unshare", "-Urm", "/bin/sh", "-c", #"mount --bind /dev/null "$1" && shift && exec "$@""#,
            "sh", file,
        ]
    }
}
