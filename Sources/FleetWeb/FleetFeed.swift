public import FleetModel
public import FleetRPC
public import FleetRPCClient
import Glibc
public import JSONRPC
public import Logging
public import ServiceLifecycle

/// The daemon as blefleet-web sees it: one connection to the socket, subscribed to every
/// event topic, and a copy of the fleet kept from `boards.list` and the events, in the
/// order they came. Pages follow it through ``subscribe()``: a snapshot of the copy first,
/// then each event as it comes (`text/event-stream` frames, see ``ServerSentEvent``).
/// Calls from pages (`POST /rpc`) and scrapes go through connections of their own
/// (``DaemonLine``).
///
/// When the daemon goes away every page is told (`daemon`, up false); the feed tries again
/// every 0.25-5 s and, once it is back, sends every page a new snapshot.
public actor FleetFeed: Service {
    /// One board of the copy, with when its readings came (their age is told on a snapshot).
    struct Board {
        var info: BoardInfo
        /// When each sensor's latest value came, by sensor name.
        var readAt: [String: ContinuousClock.Instant] = [:]
    }

    let socketPath: String
    let logger: Logger
    private var client: FleetRPCClient?
    /// The pages' calls and the scrapes, each on a connection of its own.
    private let calls: DaemonLine
    private let scrapes: DaemonLine
    private var boards: [BoardAddress: Board] = [:]
    private var order: [BoardAddress] = []
    private var subscribers: [Int: AsyncStream<String>.Continuation] = [:]
    private var nextSubscriber = 0
    private var awayReason: String? = "blefleet-web has not reached blefleetd yet"
    /// Links made again, by board: a board that was ready, lost it and is ready again.
    private var reconnects: [BoardAddress: Int] = [:]
    /// Boards seen ready since the feed started (their next `ready` is a reconnect).
    private var everReady: Set<BoardAddress> = []
    private var finished = false

    /// How many frames a page may fall behind before it is cut off (its browser connects
    /// again and gets a fresh snapshot).
    static let pageBacklog = 4096
    /// A comment every so often keeps proxies from closing a quiet stream and finds pages
    /// that went away.
    static let keepAlive: Duration = .seconds(15)

    public init(socketPath: String, logger: Logger) {
        self.socketPath = socketPath
        self.logger = logger
        calls = DaemonLine(socketPath: socketPath)
        scrapes = DaemonLine(socketPath: socketPath)
    }

    /// Reconnects counted since blefleet-web started, by board address.
    public var reconnectCounts: [BoardAddress: Int] { reconnects }

    // MARK: Pages

    /// A stream of event-stream frames for one page: the snapshot first, then the events.
    /// It ends when the page falls too far behind or blefleet-web stops.
    public func subscribe() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream(
            bufferingPolicy: .bufferingOldest(Self.pageBacklog))
        guard !finished else {
            continuation.finish()
            return stream
        }
        let id = nextSubscriber
        nextSubscriber += 1
        continuation.yield(snapshotFrame())
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: Int) {
        subscribers[id] = nil
    }

    private func broadcast(_ frame: String) {
        for (id, page) in subscribers {
            if case .dropped = page.yield(frame) {
                logger.info("a page fell behind; it is cut off and will get a fresh snapshot when it connects again")
                page.finish()
                subscribers[id] = nil
            }
        }
    }

    private func snapshotFrame() -> String {
        let now = ContinuousClock.now
        let list: [BoardInfo] = order.compactMap { address in
            guard var board = boards[address] else { return nil }
            board.info.age(at: now, readAt: board.readAt)
            return board.info
        }
        let snapshot = Snapshot(
            up: awayReason == nil, version: BlefleetVersion.current, boards: list, reason: awayReason)
        return ServerSentEvent.frame(event: "snapshot", data: snapshot)
    }

    struct Snapshot: Encodable {
        var up: Bool
        var version: String
        var boards: [BoardInfo]
        var reason: String?
    }

    // MARK: Calls

    /// Calls `method` on the daemon for a page (params as they came).
    /// Calls `method` for the web user called `user`: the daemon is told whose call it is
    /// (`_meta.user` in named params, which it logs with the call and which grants nothing).
    public nonisolated func call(_ method: String, params: JSONValue?, user: String? = nil) async throws(FleetRPCClientError)
        -> JSONValue
    {
        var params = params
        if let user {
            switch params {
            case nil, .null?: params = ["_meta": ["user": .string(user)]]
            case .object(var members)?:
                members["_meta"] = ["user": .string(user)]
                params = .object(members)
            default: break  // positional: nowhere to say it
            }
        }
        return try await calls.call(method, params: params, timeout: .seconds(120))
    }

    /// The groups the daemon serves (`daemon.status`), from the pages' calls line.
    public nonisolated func daemonAccess() async -> DaemonStatus.Access? {
        await calls.daemonAccess()
    }

    /// The fleet as the daemon tells it now (one `boards.list`): what a scrape reports.
    public nonisolated func currentBoards() async throws(FleetRPCClientError) -> [BoardInfo] {
        try await scrapes.call(FleetMethods.BoardsList.self, .init(), timeout: .seconds(10)).boards
    }

    // MARK: Following the daemon

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.followDaemon() }
                group.addTask { await self.keepPagesAlive() }
                await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            Task { await self.finish() }
        }
        finish()
        await calls.close()
        await scrapes.close()
    }

    /// Ends every page's stream (their HTTP responses end) and stops following.
    private func finish() {
        finished = true
        for page in subscribers.values { page.finish() }
        subscribers = [:]
        client?.close()
    }

    private func keepPagesAlive() async {
        while !Task.isCancelled && !finished {
            guard (try? await Task.sleep(for: Self.keepAlive)) != nil else { return }
            broadcast(": keep-alive\n\n")
        }
    }

    private func followDaemon() async {
        var delay: Duration = .milliseconds(250)
        while !Task.isCancelled && !finished {
            do {
                let rpc = try FleetRPCClient(socketPath: socketPath)
                let notifications = rpc.notifications()
                _ = try await rpc.call(FleetMethods.EventsSubscribe.self, EventsSubscribeParams(topics: nil))
                let list = try await rpc.call(FleetMethods.BoardsList.self, .init()).boards
                client = rpc
                replaceAll(list)
                if awayReason != nil {
                    logger.notice("following blefleetd", metadata: ["socket": "\(socketPath)"])
                }
                awayReason = nil
                delay = .milliseconds(250)
                broadcast(snapshotFrame())
                for try await notification in notifications {
                    if notification.method == EventNotification.method {
                        guard let event = notification.params(as: EventNotification.self) else { continue }
                        await handle(event, from: rpc)
                    } else if notification.method == EventNotification.droppedMethod {
                        // Events were lost (blefleet-web fell behind): take the fleet afresh.
                        replaceAll(try await rpc.call(FleetMethods.BoardsList.self, .init()).boards)
                        broadcast(snapshotFrame())
                    }
                }
                throw FleetRPCClientError.connectionClosed(method: nil)
            } catch {
                if Task.isCancelled || finished { return }
                client?.close()
                client = nil
                let reason = "blefleetd is not reachable at \(socketPath): \(error)"
                if awayReason == nil {
                    logger.warning(
                        "cannot reach blefleetd; pages show it until it is back",
                        metadata: ["socket": "\(socketPath)", "reason": "\(error)"])
                    awayReason = reason
                    broadcast(ServerSentEvent.frame(event: "daemon", data: DaemonState(up: false, reason: reason)))
                } else {
                    awayReason = reason
                }
            }
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            delay = min(delay * 2, .seconds(5))
        }
    }

    struct DaemonState: Encodable {
        var up: Bool
        var reason: String?
    }

    private func replaceAll(_ list: [BoardInfo]) {
        let now = ContinuousClock.now
        boards = [:]
        for info in list {
            var board = Board(info: info)
            for (name, sensor) in info.sensors ?? [:] {
                if let age = sensor.ageMs { board.readAt[name] = now - .milliseconds(age) }
            }
            boards[info.address] = board
            if info.state == .ready { everReady.insert(info.address) }
        }
        order = list.map(\.address)
    }

    /// Applies one event to the copy and passes it on to every page. A board that joins, or
    /// changes state or LED, is read again from the daemon (its adapter, RSSI and LED come
    /// with it) and sent to the pages as a `board` frame.
    private func handle(_ event: EventNotification, from rpc: FleetRPCClient) async {
        broadcast(ServerSentEvent.frame(event: "fleet", data: event))
        guard let text = event.address, let address = BoardAddress(text) else { return }
        let now = ContinuousClock.now
        switch event.detail {
        case .temperature(let celsius):
            boards[address]?.info.temperature = TemperatureReading(value: Celsius(degrees: celsius), age: .zero)
            boards[address]?.info.sensors?[TemperatureReading.sensor, default: SensorInfo()].value = Double(celsius)
            boards[address]?.readAt[TemperatureReading.sensor] = now
        case .sensor(let name, let value, let unit):
            if boards[address]?.info.sensors == nil { boards[address]?.info.sensors = [:] }
            boards[address]?.info.sensors?[name, default: SensorInfo(unit: unit)].value = value
            boards[address]?.readAt[name] = now
        case .removed:
            boards[address] = nil
            order.removeAll { $0 == address }
        case .adapter:
            break
        default:
            // Any other change of a board (its state, name, alias or LED): it is read again.
            if case .state(_, .ready) = event.detail {
                if everReady.contains(address) {
                    reconnects[address, default: 0] += 1
                } else {
                    everReady.insert(address)
                }
            }
            await refresh(address, from: rpc)
        }
    }

    private func refresh(_ address: BoardAddress, from rpc: FleetRPCClient) async {
        guard let info = try? await rpc.call(
            FleetMethods.BoardsList.self, .init(select: Selection([.address(address)])), timeout: .seconds(10)
        ).boards.first else { return }
        var board = boards[address] ?? Board(info: info)
        let known = boards[address] != nil
        let now = ContinuousClock.now
        board.info = info
        for (name, sensor) in info.sensors ?? [:] {
            if let age = sensor.ageMs { board.readAt[name] = now - .milliseconds(age) }
        }
        boards[address] = board
        if !known {
            order.append(address)
            order.sort { $0.rawValue < $1.rawValue }
        }
        broadcast(ServerSentEvent.frame(event: "board", data: info))
    }
}

extension BoardInfo {
    /// Sets each reading's age to its age at `now`, from when it came.
    mutating func age(at now: ContinuousClock.Instant, readAt: [String: ContinuousClock.Instant]) {
        func milliseconds(_ since: ContinuousClock.Instant) -> Int {
            let (seconds, attoseconds) = (now - since).components
            return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
        }
        if let at = readAt[TemperatureReading.sensor], let reading = temperature {
            temperature = TemperatureReading(value: reading.value, age: now - at)
        }
        guard var sensors else { return }
        for (name, at) in readAt where sensors[name]?.value != nil {
            sensors[name]?.ageMs = milliseconds(at)
        }
        self.sensors = sensors
    }
}

/// One frame of a `text/event-stream` response.
enum ServerSentEvent {
    static func frame(event: String, data: some Encodable) -> String {
        let json = (try? JSONCodec.encode(data)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        return "event: \(event)\ndata: \(json)\n\n"
    }
}
