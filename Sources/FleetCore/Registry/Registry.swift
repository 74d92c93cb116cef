public import Foundation
public import Logging
import Synchronization

/// The known boards, persisted in ``RegistryFile``.
///
/// Changes a user makes (adopt, alias, desired LED, forget, a new name) are saved at once;
/// `lastSeen` updates are coalesced and saved at most once per ``lastSeenInterval`` (or on
/// ``flush()``), so a busy fleet does not fsync on every advertisement. When a save fails
/// the change stays in memory, the error is thrown, and the next save retries.
public actor Registry {
    /// The backing file.
    public nonisolated let file: RegistryFile
    /// Minimum time between saves caused only by `lastSeen` updates.
    public nonisolated let lastSeenInterval: Duration
    /// Problems found when the registry was loaded (bad file moved aside, stale temp files).
    public nonisolated let loadIssues: [RegistryIssue]

    /// Saves block on fsync: the registry runs on a queue of its own (see ``DispatchQueueExecutor``),
    /// or where its maker says (a simulation runs everything on its one thread).
    private nonisolated let executor: any SerialExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The known boards, by address: changed on this actor alone, and kept under a lock so
    /// that who a board is (its name and alias: ``identity(of:)``) is read without a hop to
    /// this actor (a call resolves its selection for every board at once). The one record of
    /// a board's name and alias: the fleet keeps no copy.
    private nonisolated let known: Mutex<[BoardAddress: BoardRecord]>
    private var records: [BoardAddress: BoardRecord] {
        get { known.withLock { $0 } }
        set { known.withLock { $0 = newValue } }
    }
    private var dirty = false
    private var lastSave: Date?
    /// False when a bad registry file could not be moved aside: never overwrite it.
    private let canSave: Bool
    private let logger: Logger

    /// Loads the registry from `directory` (see ``RegistryFile/load(now:)``) and logs any issue.
    public init(
        directory: String, lastSeenInterval: Duration = .seconds(60), logger: Logger, now: Date = Date(),
        executor: (any SerialExecutor)? = nil
    ) {
        self.executor = executor ?? DispatchQueueExecutor(label: "blefleet.registry")
        file = RegistryFile(directory: directory)
        self.lastSeenInterval = lastSeenInterval
        self.logger = logger
        let loaded = file.load(now: now)
        loadIssues = loaded.issues
        known = Mutex(Dictionary(loaded.boards.map { ($0.address, $0) }, uniquingKeysWith: { first, _ in first }))
        canSave = !loaded.issues.contains { $0.severity == .error && $0.movedTo == nil }
        for issue in loaded.issues {
            switch issue.severity {
            case .error: logger.error("\(issue.description)", metadata: ["registry.path": "\(issue.path)"])
            case .warning: logger.warning("\(issue.description)", metadata: ["registry.path": "\(issue.path)"])
            case .notice: logger.notice("\(issue.description)", metadata: ["registry.path": "\(issue.path)"])
            }
        }
    }

    /// All known boards, sorted by address.
    public var boards: [BoardRecord] { records.values.sorted { $0.address < $1.address } }

    /// The record for `address`, if known.
    public func record(for address: BoardAddress) -> BoardRecord? { records[address] }

    /// Who the board at `address` is (its name and alias, as last saved here), read without
    /// waiting for this actor; nil when it is not known.
    public nonisolated func identity(of address: BoardAddress) -> BoardIdentity? {
        known.withLock { $0[address].map { BoardIdentity(address: address, name: $0.name, alias: $0.alias) } }
    }

    /// Whether unsaved `lastSeen` updates are pending.
    public var hasUnsavedChanges: Bool { dirty }

    /// Adds a board (saved at once) or refreshes a known one: a changed name is saved at once,
    /// a new `lastSeen` only when ``lastSeenInterval`` has passed since the last save.
    /// - Returns: true when the board was new.
    @discardableResult
    public func noteSeen(_ address: BoardAddress, name: String?, at now: Date = Date()) throws(RegistryError) -> Bool {
        guard var record = records[address] else {
            records[address] = BoardRecord(address: address, name: name, firstSeen: now, lastSeen: now)
            try save(now: now)
            return true
        }
        let renamed = name != nil && name != record.name
        if let name { record.name = name }
        record.lastSeen = max(record.lastSeen, now)
        records[address] = record
        dirty = true
        if renamed || saveIsDue(now: now) { try save(now: now) }
        return false
    }

    /// Sets or clears (`nil`) a board's alias; saved at once. An alias must be unique and
    /// must not look like an address, a glob or `all`, so selections stay unambiguous.
    public func setAlias(_ alias: String?, for address: BoardAddress, now: Date = Date()) throws(RegistryError) {
        guard var record = records[address] else { throw Self.unknown(address) }
        let cleaned = alias?.trimmingWhitespace()
        if let cleaned, !cleaned.isEmpty {
            if cleaned == "all" || BoardAddress(cleaned) != nil || GlobPattern.hasMetacharacters(cleaned)
                || cleaned.contains(",")
            {
                throw RegistryError(message: "The alias \"\(cleaned)\" is not allowed: it must not be \"all\", an address, or contain *, ?, [ or a comma.")
            }
            if let other = records.values.first(where: { $0.alias == cleaned && $0.address != address }) {
                throw RegistryError(message: "The alias \"\(cleaned)\" is already used by \(other.address).")
            }
            record.alias = cleaned
        } else {
            record.alias = nil
        }
        records[address] = record
        try save(now: now)
    }

    /// Records the LED state the user asked for; saved at once.
    public func setDesiredLED(_ led: DesiredLED, for address: BoardAddress, now: Date = Date()) throws(RegistryError) {
        try setDesiredLED(led, for: [address], now: now)
    }

    /// Records the desired LED of several boards in one update: one atomic write.
    public func setDesiredLED(_ led: DesiredLED, for addresses: [BoardAddress], now: Date = Date()) throws(RegistryError) {
        for address in addresses where records[address] == nil { throw Self.unknown(address) }
        var changed = false
        for address in addresses where records[address]?.desiredLED != led {
            records[address]?.desiredLED = led
            changed = true
        }
        if changed { try save(now: now) }
    }

    /// Removes a board; saved at once. Returns false when it was not known.
    @discardableResult
    public func forget(_ address: BoardAddress, now: Date = Date()) throws(RegistryError) -> Bool {
        guard records.removeValue(forKey: address) != nil else { return false }
        try save(now: now)
        return true
    }

    /// Saves pending `lastSeen` updates if ``lastSeenInterval`` has passed (call from a
    /// periodic timer).
    public func flushIfDue(now: Date = Date()) throws(RegistryError) {
        if dirty && saveIsDue(now: now) { try save(now: now) }
    }

    /// Saves pending changes now (on shutdown).
    public func flush(now: Date = Date()) throws(RegistryError) {
        if dirty { try save(now: now) }
    }

    private func saveIsDue(now: Date) -> Bool {
        guard let lastSave else { return true }
        let elapsed = now.timeIntervalSince(lastSave)
        // A clock that jumped backwards must not suppress saves forever.
        return elapsed < 0 || elapsed >= lastSeenInterval.seconds
    }

    private func save(now: Date) throws(RegistryError) {
        dirty = true
        guard canSave else {
            throw RegistryError(message: "The registry is not saved because the bad file \(file.path) could not be moved aside; fix or remove it and restart.")
        }
        do {
            try file.save(Array(records.values))
        } catch {
            logger.error("Saving the board registry failed: \(error.message)", metadata: ["registry.path": "\(file.path)"])
            throw error
        }
        dirty = false
        lastSave = now
    }

    private static func unknown(_ address: BoardAddress) -> RegistryError {
        RegistryError(message: "No board with address \(address) is known.")
    }
}
