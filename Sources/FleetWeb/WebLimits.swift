import Hummingbird
import HummingbirdCore
import NIOHTTPTypes
import Logging
public import NIOCore
import NIOPosix
import Synchronization

/// What one client of blefleet-web may hold at once, so that no one of them takes the
/// server or the daemon from the others.
public struct WebLimits: Sendable {
    /// Connections open at once. A new one past it takes the place of the connection idle
    /// longest (no request under way); with none idle it is closed as it comes.
    public var connections = 512
    /// Connections open at once from one address, on the same terms (its own idle ones go first).
    public var connectionsPerAddress = 128
    /// A connection that sends nothing (not even a whole request head) for this long is closed.
    public var idleTimeout: TimeAmount = .seconds(30)
    /// `/rpc` calls of one web user under way at once; more are answered `busy` at once.
    public var callsPerUser = 4
    /// Event streams (`/events`: a page each) one web user holds open at once; more are
    /// answered 429. Streams are never idle, so they are what a user could hold the cap with.
    public var streamsPerUser = 32
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

/// Every open connection of blefleet-web, with its address and whether a request is under
/// way on it. At the caps (``WebLimits/connections``, ``WebLimits/connectionsPerAddress``) a
/// new connection takes the place of the one idle longest (of its own address at the
/// address's cap): idle connections, however many, cannot keep a scrape or a page out. Only
/// connections serving a request hold their place, and those are bounded per user (calls,
/// streams); a connection is refused only when every one in its way is serving.
final class WebConnections: Sendable {
    struct Entry {
        let address: String
        let channel: any Channel
        /// Requests read and not yet answered to their end.
        var requests = 0
        var idleSince: NIODeadline
    }

    struct Table {
        var entries: [ObjectIdentifier: Entry] = [:]
        var byAddress: [String: Int] = [:]

        func idlest(from address: String?) -> ObjectIdentifier? {
            var best: (ObjectIdentifier, NIODeadline)?
            for (id, entry) in entries where entry.requests == 0 && (address == nil || entry.address == address) {
                if best.map({ entry.idleSince < $0.1 }) ?? true { best = (id, entry.idleSince) }
            }
            return best?.0
        }

        mutating func remove(_ id: ObjectIdentifier) -> Entry? {
            guard let entry = entries.removeValue(forKey: id) else { return nil }
            byAddress[entry.address, default: 1] -= 1
            if byAddress[entry.address] == 0 { byAddress[entry.address] = nil }
            return entry
        }
    }

    enum Admission {
        /// Served; `reclaimed` is the idle connection whose place it took, to close.
        case admitted(reclaimed: (any Channel)?)
        case refused
    }

    let limit: Int
    let perAddress: Int
    let logger: Logger
    private let table = Mutex(Table())
    let refused = Atomic<Int>(0)
    private let told = Mutex<ContinuousClock.Instant?>(nil)

    init(limit: Int, perAddress: Int, logger: Logger) {
        self.limit = limit
        self.perAddress = perAddress
        self.logger = logger
    }

    var count: Int { table.withLock { $0.entries.count } }

    func admit(_ id: ObjectIdentifier, channel: any Channel, address: String, now: NIODeadline = .now()) -> Admission {
        let outcome = table.withLock { table -> Admission in
            var victim: ObjectIdentifier?
            if table.byAddress[address, default: 0] >= perAddress {
                guard let idle = table.idlest(from: address) else { return .refused }
                victim = idle
            } else if table.entries.count >= limit {
                guard let idle = table.idlest(from: nil) else { return .refused }
                victim = idle
            }
            let taken = victim.flatMap { table.remove($0) }
            table.entries[id] = Entry(address: address, channel: channel, idleSince: now)
            table.byAddress[address, default: 0] += 1
            return .admitted(reclaimed: taken?.channel)
        }
        if case .refused = outcome {
            let total = refused.add(1, ordering: .relaxed).newValue
            say("refusing connections: every one blefleet-web keeps (\(limit), \(perAddress) from one address) is serving a request", total)
        }
        return outcome
    }

    func requestBegan(_ id: ObjectIdentifier) {
        table.withLock { $0.entries[id]?.requests += 1 }
    }

    func requestEnded(_ id: ObjectIdentifier, now: NIODeadline = .now()) {
        table.withLock {
            guard var entry = $0.entries[id] else { return }
            entry.requests = max(0, entry.requests - 1)
            entry.idleSince = now
            $0.entries[id] = entry
        }
    }

    func closed(_ id: ObjectIdentifier) {
        table.withLock { _ = $0.remove(id) }
    }

    /// Said once a minute at most, with how many were refused.
    private func say(_ message: String, _ total: Int) {
        let now = ContinuousClock.now
        let say = told.withLock { last -> Bool in
            guard last.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
            last = now
            return true
        }
        if say { logger.warning("\(message)", metadata: ["web.refused.total": "\(total)"]) }
    }
}

/// Keeps one connection in ``WebConnections`` (one pipeline handler per connection, after
/// HTTP decoding): admitted or refused as it opens, busy from a request's head to its
/// answer's end, gone when it closes. An answer that says `Connection: close` (a refusal
/// that should not hold a connection) closes it once written.
final class ConnectionTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let connections: WebConnections
    private var tracked = false
    private var closeAfterAnswer = false

    init(connections: WebConnections) {
        self.connections = connections
    }

    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    func channelActive(context: ChannelHandlerContext) {
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        switch connections.admit(id, channel: context.channel, address: address) {
        case .refused:
            context.close(promise: nil)
        case .admitted(let reclaimed):
            tracked = true
            reclaimed?.close(promise: nil)
            context.fireChannelActive()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if tracked {
            tracked = false
            connections.closed(id)
        }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { connections.requestBegan(id) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.headerFields[.connection]?.lowercased() == "close" { closeAfterAnswer = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            connections.requestEnded(id)
            guard closeAfterAnswer else { return context.write(data, promise: promise) }
            let written = promise ?? context.eventLoop.makePromise()
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.write(data, promise: written)
        }
    }
}

/// Things under way by web user (`/rpc` calls, event streams), each kind bounded per user.
final class PerUserCount: Sendable {
    private let byUser = Mutex<[String: Int]>([:])
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts one of `user`'s in, unless they have ``limit`` already.
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

    /// One of `user`'s held for as long as this value lives (a response body that may never
    /// be written still gives its place back when it is dropped).
    final class Held: Sendable {
        let count: PerUserCount
        let user: String

        init(_ count: PerUserCount, user: String) {
            self.count = count
            self.user = user
        }

        deinit { count.leave(user) }
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

    let logger: Logger

    init(file: AuthFile, limits: WebLimits, logger: Logger) {
        self.file = file
        self.limits = limits
        self.logger = logger
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
        let claimed = AuthFile.credentials(authorization: header)?.user ?? "(no basic credentials)"
        // Not logged: the failures that led here were, and this answer costs nothing.
        if recent >= limits.failuresPerMinute { return .tooManyFailures }
        // Only the hashing counts against the queue: a wrong password's delay holds no thread.
        guard waiting.add(1, ordering: .relaxed).newValue <= limits.passwordQueue else {
            waiting.subtract(1, ordering: .relaxed)
            return .overloaded
        }
        let file = self.file
        let user = try? await pool.runIfActive { file.user(authorization: header) }
        waiting.subtract(1, ordering: .relaxed)
        if let user {
            logger.info("web login", metadata: ["web.user": "\(user.name)", "web.role": "\(user.role.rawValue)", "web.address": "\(address)"])
            return .user(user)
        }
        logger.notice("web login failed: wrong user or password", metadata: [
            "web.address": "\(address)", "web.user.claimed": "\(claimed)"])
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
