public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The registry's on-disk form, `<directory>/boards.json`:
/// `{"version": 1, "boards": [...]}`, replaced atomically on every save (temp file in the
/// same directory, fsync, rename over, fsync the directory), so a crash at any moment leaves
/// either the old or the new complete file.
public struct RegistryFile: Sendable {
    /// The format version this code reads and writes.
    public static let currentVersion = 1
    /// The file name inside the state directory.
    public static let fileName = "boards.json"
    static let temporaryPrefix = fileName + ".tmp-"
    static let corruptPrefix = fileName + ".corrupt-"

    /// The state directory.
    public let directory: String

    public init(directory: String) { self.directory = directory }

    /// Full path of the registry file.
    public var path: String { directory + "/" + Self.fileName }

    /// What ``load(now:)`` found.
    public struct Loaded: Sendable {
        /// The boards read (empty when the file is missing or was bad).
        public var boards: [BoardRecord]
        /// Problems found: a bad file moved aside, stale temporary files removed…
        public var issues: [RegistryIssue]
    }

    /// Reads the registry. A missing file is an empty registry. A file that cannot be read or
    /// parsed is reported in `issues` and renamed to `boards.json.corrupt-<timestamp>`, never
    /// overwritten. Temporary files left by a writer killed mid-save are removed.
    public func load(now: Date = Date()) -> Loaded {
        var issues = removeStaleTemporaryFiles()
        let data: Data
        switch readFile(path) {
        case .missing:
            return Loaded(boards: [], issues: issues)
        case .failed(let reason):
            issues.append(moveAside(reason: "it cannot be read: \(reason)", now: now))
            return Loaded(boards: [], issues: issues)
        case .read(let bytes):
            data = bytes
        }
        do {
            let boards = try Self.decode(data)
            return Loaded(boards: boards, issues: issues)
        } catch {
            issues.append(moveAside(reason: error.description, now: now))
            return Loaded(boards: [], issues: issues)
        }
    }

    /// Atomically replaces the registry with `boards` (creating the directory if needed).
    public func save(_ boards: [BoardRecord]) throws(RegistryError) {
        try makeDirectory()
        let data = try Self.encode(boards)
        var template = Array((directory + "/" + Self.temporaryPrefix + "XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw RegistryError(path: directory, operation: "create a temporary file in", errno: errno) }
        let temporaryPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var renamed = false
        defer { if !renamed { unlink(temporaryPath) } }
        do {
            defer { close(fd) }
            try writeAll(fd: fd, data: data, path: temporaryPath)
            _ = fchmod(fd, 0o644)
            guard fsync(fd) == 0 else { throw RegistryError(path: temporaryPath, operation: "fsync", errno: errno) }
        }
        guard rename(temporaryPath, path) == 0 else {
            throw RegistryError(path: path, operation: "rename \(temporaryPath) over", errno: errno)
        }
        renamed = true
        let dirFD = open(directory, O_RDONLY | O_DIRECTORY)
        guard dirFD >= 0 else { throw RegistryError(path: directory, operation: "open", errno: errno) }
        defer { close(dirFD) }
        // Some file systems cannot fsync a directory (EINVAL); the rename is still atomic there.
        guard fsync(dirFD) == 0 || errno == EINVAL else {
            throw RegistryError(path: directory, operation: "fsync", errno: errno)
        }
    }

    // MARK: - Encoding

    private struct Document: Codable {
        var version: Int
        var boards: [BoardRecord]
    }

    private struct VersionProbe: Decodable {
        var version: Int?
    }

    /// The JSON for `boards` (sorted by address, stable key order).
    static func encode(_ boards: [BoardRecord]) throws(RegistryError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return try encoder.encode(Document(version: currentVersion, boards: boards.sorted { $0.address < $1.address }))
        } catch {
            throw RegistryError(message: "The registry could not be encoded: \(error).")
        }
    }

    /// Parses a registry document; throws a sentence saying what is wrong.
    static func decode(_ data: Data) throws(RegistryError) -> [BoardRecord] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let probe: VersionProbe
        do {
            probe = try decoder.decode(VersionProbe.self, from: data)
        } catch {
            throw RegistryError(message: "it is not a JSON object (\(describe(error)))")
        }
        guard let version = probe.version else { throw RegistryError(message: "it has no \"version\" field") }
        guard version == currentVersion else {
            throw RegistryError(message: "it has version \(version); this blefleetd reads version \(currentVersion)")
        }
        let document: Document
        do {
            document = try decoder.decode(Document.self, from: data)
        } catch {
            throw RegistryError(message: "it is not a valid registry (\(describe(error)))")
        }
        var seen = Set<BoardAddress>()
        for board in document.boards where !seen.insert(board.address).inserted {
            throw RegistryError(message: "it lists \(board.address) twice")
        }
        return document.boards
    }

    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            let at = context.codingPath.map(\.stringValue).joined(separator: ".")
            let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
            return (at.isEmpty ? "" : "at \(at): ") + (underlying ?? context.debugDescription)
        case .keyNotFound(let key, let context):
            let at = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "missing \"\(key.stringValue)\"" + (at.isEmpty ? "" : " at \(at)")
        default:
            return "\(error)"
        }
    }

    // MARK: - File system

    private enum ReadResult {
        case missing
        case failed(String)
        case read(Data)
    }

    private func readFile(_ path: String) -> ReadResult {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            let code = errno
            return code == ENOENT ? .missing : .failed(String(cString: strerror(code)))
        }
        defer { close(fd) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return .read(data) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failed(String(cString: strerror(errno)))
            }
            data.append(contentsOf: buffer[0..<n])
        }
    }

    private func writeAll(fd: Int32, data: Data, path: String) throws(RegistryError) {
        var offset = 0
        while offset < data.count {
            let n = data.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RegistryError(path: path, operation: "write", errno: errno)
            }
            offset += n
        }
    }

    private func makeDirectory() throws(RegistryError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw RegistryError(message: "The state directory \(directory) cannot be created: \(error.localizedDescription)")
        }
    }

    /// Removes `boards.json.tmp-*` left by a writer that died before renaming.
    func removeStaleTemporaryFiles() -> [RegistryIssue] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var issues: [RegistryIssue] = []
        for name in names where name.hasPrefix(Self.temporaryPrefix) {
            let stale = directory + "/" + name
            if unlink(stale) == 0 {
                issues.append(RegistryIssue(path: stale, movedTo: nil, reason: "a temporary file left by an interrupted save was removed", severity: .notice))
            } else {
                issues.append(RegistryIssue(path: stale, movedTo: nil, reason: "a temporary file left by an interrupted save could not be removed: \(String(cString: strerror(errno)))", severity: .warning))
            }
        }
        return issues
    }

    private func moveAside(reason: String, now: Date) -> RegistryIssue {
        let stamp = Self.timestamp(now)
        var target = directory + "/" + Self.corruptPrefix + stamp
        var suffix = 1
        while access(target, F_OK) == 0 {
            target = directory + "/" + Self.corruptPrefix + stamp + "-\(suffix)"
            suffix += 1
        }
        if rename(path, target) == 0 {
            return RegistryIssue(path: path, movedTo: target, reason: reason, severity: .error)
        }
        let why = String(cString: strerror(errno))
        return RegistryIssue(path: path, movedTo: nil, reason: "\(reason); moving it aside failed too (\(why))", severity: .error)
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }
}
