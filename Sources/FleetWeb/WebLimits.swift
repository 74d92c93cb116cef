import Hummingbird
import Logging
public import NIOCore
import NIOPosix
import Synchronization

/// What one client of blefleet-web may hold at once, so that no one of them takes the
/// server or the daemon from the others.
public struct WebLimits: Sendable {
    /// Connections open at once; more are closed as they come (each page holds one for its
    /// event stream, a browser up to six).
    public var connections = 512
    /// A connection that sends nothing (not even a whole request head) for this long is closed.
    public var idleTimeout: TimeAmount = .seconds(30)
    /// `/rpc` calls of one web user under way at once; more are answered `busy` at once.
    public var callsPerUser = 4
    /// Password checks (tens of ms of CPU each) running at once, on threads of their own.
    public var passwordChecks = 2
    /// Password checks waiting for a thread; more are answered 503 at once.
    public var passwordQueue = 32
    /// Wrong passwords from one address within a minute before it gets 429 without a check.
    public var failuresPerMinute = 10
    /// How long a wrong password's 401 waits.
    public var failureDelay: Duration = .milliseconds(500)

    public init() {}
}

/// Closes connections beyond ``WebLimits/connections`` as they open (one pipeline handler per
/// connection, one count for all of them).
final class ConnectionCap: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    final class Count: Sendable {
        let limit: Int
        let open = Atomic<Int>(0)
        let refused = Atomic<Int>(0)
        let logger: Logger
        let told = Mutex<ContinuousClock.Instant?>(nil)

        init(limit: Int, logger: Logger) {
            self.limit = limit
            self.logger = logger
        }
    }

    let count: Count
    private var counted = false

    init(count: Count) {
        self.count = count
    }

    func channelActive(context: ChannelHandlerContext) {
        if count.open.add(1, ordering: .relaxed).newValue > count.limit {
            count.open.subtract(1, ordering: .relaxed)
            let refused = count.refused.add(1, ordering: .relaxed).newValue
            // Said once a minute at most, with how many were refused.
            let now = ContinuousClock.now
            let say = count.told.withLock { last -> Bool in
                guard last.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
                last = now
                return true
            }
            if say {
                count.logger.warning(
                    "refusing connections: \(count.limit) are open, the most blefleet-web keeps",
                    metadata: ["web.refused.total": "\(refused)"])
            }
            context.close(promise: nil)
            return
        }
        counted = true
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if counted {
            counted = false
            count.open.subtract(1, ordering: .relaxed)
        }
        context.fireChannelInactive()
    }
}

/// `/rpc` calls under way by web user.
final class CallsInFlight: Sendable {
    private let byUser = Mutex<[String: Int]>([:])
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a call of `user` in, unless they have ``limit`` already.
    func enter(_ user: String) -> Bool {
        byUser.withLock {
            guard $0[user, default: 0] < limit else { return false }
            $0[user, default: 0] += 1
            return true
        }
    }

    func leave(_ user: String) {
        byUser.withLock {
            $0[user, default: 1] -= 1
            if $0[user] == 0 { $0[user] = nil }
        }
    }
}

/// Password checks on threads of their own (a hash takes tens of ms: on the cooperative
/// pool it would hold up every page and scrape), a few at once, a bounded queue, and
/// wrong passwords slowed and counted per address.
final class PasswordChecks: Sendable {
    enum Outcome: Sendable {
        case user(WebUser)
        case wrong
        /// Too many wrong passwords from this address lately.
        case tooManyFailures
        /// Too many checks waiting.
        case overloaded
    }

    /// Addresses whose wrong passwords are counted at once.
    static let maxAddresses = 4096

    let file: AuthFile
    let limits: WebLimits
    private let pool: NIOThreadPool
    private let waiting = Atomic<Int>(0)
    private let failures = Mutex<[String: [ContinuousClock.Instant]]>([:])

    init(file: AuthFile, limits: WebLimits) {
        self.file = file
        self.limits = limits
        pool = NIOThreadPool(numberOfThreads: limits.passwordChecks)
        pool.start()
    }

    func check(authorization header: String?, from address: String) async -> Outcome {
        if let known = file.remembered(authorization: header) { return .user(known) }
        guard let header else { return .wrong }
        let now = ContinuousClock.now
        let recent = failures.withLock { table -> Int in
            let kept = table[address, default: []].filter { now - $0 < .seconds(60) }
            table[address] = kept.isEmpty ? nil : kept
            return kept.count
        }
        if recent >= limits.failuresPerMinute { return .tooManyFailures }
        // Only the hashing counts against the queue: a wrong password's delay holds no thread.
        guard waiting.add(1, ordering: .relaxed).newValue <= limits.passwordQueue else {
            waiting.subtract(1, ordering: .relaxed)
            return .overloaded
        }
        let file = self.file
        let user = try? await pool.runIfActive { file.user(authorization: header) }
        waiting.subtract(1, ordering: .relaxed)
        if let user { return .user(user) }
        let kept = failures.withLock { table -> Bool in
            // Bounded: addresses whose failures are all older than a minute go first; a table
            // still full of fresh ones keeps them (wiping it would let many addresses clear
            // one address's count) and the new address is answered as overloaded.
            if table.count >= Self.maxAddresses, table[address] == nil {
                table = table.filter { _, times in times.contains { now - $0 < .seconds(60) } }
                if table.count >= Self.maxAddresses { return false }
            }
            table[address, default: []].append(now)
            table[address] = Array(table[address, default: []].suffix(limits.failuresPerMinute))
            return true
        }
        try? await Task.sleep(for: limits.failureDelay)
        return kept ? .wrong : .overloaded
    }
}
