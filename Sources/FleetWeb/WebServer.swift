import FleetRPC
import FleetRPCClient
public import Hummingbird
public import HummingbirdCore
import JSONRPC
public import Logging
import NIOCore

/// blefleet-web's HTTP side (Hummingbird): the dashboard, its event stream, JSON-RPC calls
/// passed on to the daemon, and Prometheus' `/metrics`.
///
/// - `GET /`: the dashboard (``Dashboard``: `index.html`, and its `dashboard.css`,
///   `dashboard.js`, `view.mjs`).
/// - `GET /events`: `text/event-stream`: `snapshot` (the fleet), then `fleet` (each daemon
///   event as it came), `board` (a board read again after it changed), `daemon` (it went
///   away); a new `snapshot` once it is back.
/// - `POST /rpc`: one JSON-RPC 2.0 request, answered as the daemon answers it (the page's
///   calls; no second API).
/// - `GET /metrics`: ``FleetMetrics``.
public enum WebServer {
    /// What `/rpc` offers, and the role each call needs: the page's own calls and the fleet's
    /// state, nothing more. Raw GATT, forgetting or disconnecting boards, scans and the rest
    /// are for `blectl` and scripts on the daemon's socket, under their own users.
    static let offered: [String: WebRole] = [
        "boards.list": .readOnly, "daemon.status": .readOnly, "history.read": .readOnly, "led.set": .control,
        "boards.identify": .control,
    ]
    /// Methods bound to a connection, which a page cannot hold: its events come from `/events`.
    static let connectionMethods: Set<String> = ["events.subscribe", "events.unsubscribe", "gatt.notify"]
    /// The largest request body taken: a call from the page is small, and one this size,
    /// passed on, stays far below the daemon's frame limit (1 MiB unless configured lower).
    static let maxBody = 64 << 10

    /// The HTTP server's settings for `limits`: the idle (and request head) timeout, and the
    /// caps on open connections (``WebConnections``: idle ones give way to new ones).
    public static func server(limits: WebLimits, logger: Logger) -> HTTPServerBuilder {
        let connections = WebConnections(limit: limits.connections, perAddress: limits.connectionsPerAddress, logger: logger)
        return .http1(configuration: .init(
            additionalChannelHandlers: [ConnectionTracker(connections: connections)], idleTimeout: limits.idleTimeout))
    }

    public static func router(
        feed: FleetFeed, auth: AuthFile?, limits: WebLimits = WebLimits(), roles: LocalRoles = LocalRoles(),
        logger: Logger = Logger(label: "blefleet-web")
    ) -> Router<WebRequestContext> {
        let router = Router(context: WebRequestContext.self)
        let inFlight = PerUserCount(limit: limits.callsPerUser)
        let streams = PerUserCount(limit: limits.streamsPerUser)
        router.add(middleware: SecurityHeaders())
        if let auth {
            router.add(middleware: BasicAuthentication(checks: PasswordChecks(file: auth, limits: limits, logger: logger)))
        } else {
            router.add(middleware: LoopbackHostOnly())
            router.add(middleware: LocalAccountRoles(roles: roles, feed: feed, logger: logger))
        }
        router.add(middleware: SameOriginCalls())
        for (path, file) in Dashboard.files {
            router.get(RouterPath(path)) { _, _ -> Response in
                Response(
                    status: .ok, headers: [.contentType: file.contentType, .cacheControl: "no-cache"],
                    body: ResponseBody(byteBuffer: file.bytes))
            }
        }
        router.get("/me") { _, context -> Response in
            let user = context.webUser()
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONValue.object([
                    "user": .string(user.name), "role": .string(user.role.rawValue),
                ]).serialized())))
        }
        router.get("/events") { _, context -> Response in
            let user = context.webUser()
            guard streams.enter(user.name) else {
                return refusal(
                    .tooManyRequests,
                    "\(user.name) has \(streams.limit) event streams open already (a page each), the most blefleet-web keeps for one user; close a page first.")
            }
            let held = PerUserCount.Held(streams, user: user.name)
            let frames = await feed.subscribe()
            return Response(
                status: .ok,
                headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"],
                body: ResponseBody { writer in
                    withExtendedLifetime(held) {}
                    for await frame in frames {
                        try await writer.write(ByteBuffer(string: frame))
                    }
                    try await writer.finish(nil)
                })
        }
        router.post("/rpc") { request, context -> Response in
            let reply: [UInt8]
            let user = context.webUser()
            let entered = inFlight.enter(user.name)
            defer { if entered { inFlight.leave(user.name) } }
            if !entered {
                reply = JSONValue.object([
                    "jsonrpc": "2.0", "id": .null,
                    "error": [
                        "code": .int(Int64(RPCErrorCode.busy.rawValue)),
                        "message": .string("\(user.name) has \(inFlight.limit) calls under way already, the most blefleet-web takes at once from one user; wait for one to end."),
                    ],
                ]).serialized()
            } else if let body = try? await request.body.collect(upTo: maxBody) {
                reply = await rpc(Array(buffer: body), user: user, feed: feed, logger: logger)
            } else {
                reply = JSONValue.object([
                    "jsonrpc": "2.0", "id": .null,
                    "error": ["code": .int(Int64(RPCErrorCode.invalidRequest.rawValue)), "message": "The request is larger than 64 KiB; a call from the page is far smaller."],
                ]).serialized()
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: reply)))
        }
        let metrics = FleetMetrics.Exporter(version: BlefleetVersion.current)
        router.get("/metrics") { _, _ -> Response in
            let boards = try? await feed.currentBoards()
            let text = metrics.scrape(boards: boards, reconnects: await feed.reconnectCounts)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        return router
    }

    /// One JSON-RPC request from a page, answered with the daemon's reply (or an error the
    /// page can show when it could not be passed on). Only the ``offered`` methods, each to
    /// the users whose role allows it; the daemon is told whose call it is (`_meta.user`) and
    /// logs it with the call.
    static func rpc(_ body: [UInt8], user: WebUser, feed: FleetFeed, logger: Logger? = nil) async -> [UInt8] {
        func reply(_ id: JSONValue, result: JSONValue? = nil, error code: Int = 0, _ message: String = "", data: JSONValue? = nil)
            -> [UInt8]
        {
            var object: [String: JSONValue] = ["jsonrpc": "2.0", "id": id]
            if let result {
                object["result"] = result
            } else {
                var error: [String: JSONValue] = ["code": .int(Int64(code)), "message": .string(message)]
                if let data { error["data"] = data }
                object["error"] = .object(error)
            }
            return JSONValue.object(object).serialized()
        }
        guard let request = try? JSONValue(parsing: body) else {
            return reply(.null, error: RPCErrorCode.parseError.rawValue, "The request is not valid JSON.")
        }
        guard let members = request.objectValue else {
            return reply(.null, error: RPCErrorCode.invalidRequest.rawValue, "Send one JSON-RPC request object (no batches).")
        }
        let id = members["id"] ?? .null
        guard let method = members["method"]?.stringValue else {
            return reply(id, error: RPCErrorCode.invalidRequest.rawValue, "The request has no method.")
        }
        guard !connectionMethods.contains(method) else {
            return reply(
                id, error: RPCErrorCode.methodNotFound.rawValue,
                "\(method) needs a connection of its own; a page gets the daemon's events from /events.")
        }
        guard let needed = offered[method] else {
            return reply(
                id, error: RPCErrorCode.methodNotFound.rawValue,
                "blefleet-web does not offer \(method) (it offers \(offered.keys.sorted().joined(separator: ", "))); "
                    + "call it with blectl or on the daemon's socket.")
        }
        // Every call a page makes is logged with its user; the daemon logs it too, with the
        // user as blefleet-web's claim beside blefleet-web's own uid.
        logger?.info("web call", metadata: [
            "web.user": "\(user.name)", "web.role": "\(user.role.rawValue)", "rpc.method": "\(method)",
            "web.allowed": "\(needed != .control || user.role == .control)",
        ])
        if needed == .control, user.role != .control {
            return reply(
                id, error: RPCErrorCode.permissionDenied.rawValue,
                "Permission denied: \(method) changes state and \(user.name) may only look through blefleet-web; "
                    + "a user with the control role in its --auth-file may call it.")
        }
        do {
            let result = try await feed.call(method, params: members["params"], user: user.name)
            return reply(id, result: result)
        } catch {
            switch error {
            case .rpcError(_, let code, let message, let data):
                return reply(id, error: code, message, data: data)
            case .permissionDenied(_, let message):
                return reply(id, error: RPCErrorCode.permissionDenied.rawValue, message)
            case .invalidParams(_, let detail):
                return reply(id, error: RPCErrorCode.invalidParams.rawValue, detail)
            default:
                return reply(id, error: RPCErrorCode.internalError.rawValue, "\(error)")
            }
        }
    }
}

/// Without passwords blefleet-web serves this machine only, and only under a loopback name:
/// a page of another site whose name an attacker points at 127.0.0.1 (DNS rebinding) is
/// refused, as its `Host` is that name.
struct LoopbackHostOnly<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let authority = request.head.authority, Self.isLoopbackHost(authority) else {
            return Response(
                status: .misdirectedRequest, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string:
                    "blefleet-web without --auth-file answers only to localhost, 127.0.0.1 or [::1].\n")))
        }
        return try await next(request, context)
    }

    /// Whether a `Host` (`host:port`, `[v6]:port` or `host`) names this machine: localhost
    /// (and its subdomains), 127.0.0.0/8 or ::1.
    static func isLoopbackHost(_ header: String) -> Bool {
        let value = header.lowercased()
        let host: String
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
            host = String(value[value.index(after: value.startIndex)..<close])
        } else {
            host = String(value.split(separator: ":", maxSplits: 1).first ?? "")
        }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// Calls (`POST`) only from blefleet-web's own pages: JSON (which a form of another site
/// cannot send without the browser asking first, and blefleet-web never says yes) and, when
/// the browser names the page's origin, this server's.
struct SameOriginCalls<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard request.method == .post else { return try await next(request, context) }
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/json") else {
            return Self.refuse(.unsupportedMediaType, "POST /rpc takes Content-Type: application/json.")
        }
        if let origin = request.headers[.origin] {
            // The whole origin: scheme, host and port, as the page's own (http, or https
            // through a TLS proxy). "null" (a sandboxed frame, a file) is no page of ours.
            let host = request.head.authority?.lowercased() ?? ""
            let given = origin.lowercased()
            guard !host.isEmpty, given == "http://" + host || given == "https://" + host else {
                return Self.refuse(.forbidden, "blefleet-web takes calls from its own pages only.")
            }
        }
        return try await next(request, context)
    }

    static func refuse(_ status: HTTPResponse.Status, _ sentence: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: sentence + "\n")))
    }
}

/// HTTP basic authentication against an ``AuthFile`` (``PasswordChecks``: off the
/// cooperative pool, bounded, wrong passwords slowed per address): anything else gets 401.
/// The user found is the request's from then on (``WebRequestContext/user``).
struct BasicAuthentication: RouterMiddleware {
    let checks: PasswordChecks

    func handle(
        _ request: Request, context: WebRequestContext, next: (Request, WebRequestContext) async throws -> Response
    ) async throws -> Response {
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        switch await checks.check(authorization: request.headers[.authorization], from: address) {
        case .user(let user):
            var context = context
            context.user = user
            return try await next(request, context)
        case .wrong:
            return Response(
                status: .unauthorized,
                headers: [
                    .wwwAuthenticate: "Basic realm=\"blefleet\", charset=\"UTF-8\"", .contentType: "text/plain; charset=utf-8",
                    // The browser asks its user and comes back on a new connection: a request
                    // without credentials holds no connection open.
                    .connection: "close",
                ],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "blefleet-web needs a user and password from its --auth-file.\n")))
        case .tooManyFailures:
            return Response(
                status: .tooManyRequests, headers: [.retryAfter: "60", .contentType: "text/plain; charset=utf-8", .connection: "close"],
                body: ResponseBody(byteBuffer: ByteBuffer(string:
                    "Too many wrong passwords from \(address) in the last minute; try again in a minute.\n")))
        case .overloaded:
            return Response(
                status: .serviceUnavailable, headers: [.retryAfter: "5", .contentType: "text/plain; charset=utf-8", .connection: "close"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "blefleet-web is checking too many passwords at once; try again in a moment.\n")))
        }
    }
}

/// Headers on every answer: the page may not be framed by another (its switches could be
/// pressed under a disguise), nothing is taken for another type than it says, no referrer
/// leaves, no plugin or foreign form target.
struct SecurityHeaders<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] =
            "script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'"
        response.headers[.init("X-Frame-Options")!] = "DENY"
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.init("Referrer-Policy")!] = "no-referrer"
        return response
    }
}

/// A request to blefleet-web: who sent it (from ``BasicAuthentication``, or, without an auth
/// file, the local account the kernel says owns the other end: ``LoopbackPeer``).
public struct WebRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    public let localAddress: SocketAddress?
    /// The user of `--auth-file` the request authenticated as.
    public var user: WebUser?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        localAddress = source.channel.localAddress
    }

    /// Who the request comes from, with their role: set by ``BasicAuthentication`` or
    /// ``LocalAccountRoles`` before any route runs (a request neither names is refused there).
    func webUser() -> WebUser {
        user ?? WebUser(name: "an unidentified user", role: .readOnly)
    }
}

/// A refusal as plain text, on a connection closed once it is written.
func refusal(_ status: HTTPResponse.Status, _ sentence: String) -> Response {
    Response(
        status: status, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store", .connection: "close"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: sentence + "\n")))
}

/// Without `--auth-file`: the local account the kernel says holds the other end of the
/// connection (``LoopbackPeer``), with the role the daemon's socket gives it (``LocalRoles``);
/// anyone the socket refuses, or who cannot be told, is refused here too.
struct LocalAccountRoles: RouterMiddleware {
    let roles: LocalRoles
    let feed: FleetFeed
    let logger: Logger

    func handle(
        _ request: Request, context: WebRequestContext, next: (Request, WebRequestContext) async throws -> Response
    ) async throws -> Response {
        let uid = context.remoteAddress.flatMap { remote in
            context.localAddress.flatMap { LoopbackPeer.uid(remote: remote, local: $0) }
        }
        // Root and blefleet-web's own account need not wait for the daemon's groups.
        let access = uid == 0 || uid == roles.ownUID || uid == nil ? nil : await feed.daemonAccess()
        switch roles.resolve(uid: uid, access: access) {
        case .user(let user):
            var context = context
            context.user = user
            return try await next(request, context)
        case .refused(let status, let sentence):
            logger.notice("web request refused", metadata: [
                "web.uid": "\(uid.map(String.init) ?? "unknown")", "web.path": "\(request.uri.path)", "web.reason": "\(sentence)"])
            return refusal(status, sentence)
        }
    }
}
