/// How the history is kept (`history:` in blefleetd.conf(5)).
public struct HistorySettings: Sendable, Equatable {
    /// Whether readings are kept at all (`enabled`).
    public var enabled = true
    /// The SQLite file: `history.sqlite3` in the state directory (set by the daemon).
    public var path: String
    /// Days every reading is kept (`raw-days`).
    public var rawDays = 10
    /// Days the 5-minute buckets are kept (`five-minute-days`); hourly ones are kept for ever,
    /// within the cap.
    public var fiveMinuteDays = 90
    /// The most the file may hold, in bytes (`max-size-mb`, in MiB); the oldest data goes
    /// first when it is reached.
    public var maxBytes: Int64 = 512 << 20

    /// The keys of `history:`, each with what it allows.
    public static let keys: [(key: String, allowed: String)] = [
        ("enabled", "true or false"), ("raw-days", "days from 1 to 3650"), ("five-minute-days", "days from 1 to 36500"),
        ("max-size-mb", "MiB from 1 to 1048576"),
    ]

    public init(path: String = "") {
        self.path = path
    }
}
