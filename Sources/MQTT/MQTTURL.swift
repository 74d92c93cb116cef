/// Where the broker is: `mqtt://host[:port]` (plain TCP, port 1883 by default) or
/// `mqtts://host[:port]` (TLS, port 8883 by default). IPv6 literals go in brackets,
/// `mqtt://[::1]:1883`. Nothing may follow the port: no path, query, or user info
/// (credentials belong in ``MQTTClient/Configuration``).
public struct MQTTURL: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int
    /// True for `mqtts://`.
    public let usesTLS: Bool

    public static let defaultPort = 1883
    public static let defaultTLSPort = 8883

    public init(host: String, port: Int? = nil, usesTLS: Bool = false) {
        self.host = host
        self.port = port ?? (usesTLS ? Self.defaultTLSPort : Self.defaultPort)
        self.usesTLS = usesTLS
    }

    /// Parses `mqtt://host[:port]` or `mqtts://host[:port]`; throws ``MQTTError`` of kind
    /// `.invalidURL` with a sentence naming what is wrong.
    public init(_ text: String) throws {
        func invalid(_ why: String) -> MQTTError {
            MQTTError(.invalidURL, "The broker URL \"\(text)\" \(why)")
        }
        guard let schemeEnd = text.firstRange(of: "://") else {
            throw invalid("has no scheme: write mqtt://host[:port] or mqtts://host[:port].")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        let usesTLS: Bool
        switch scheme {
        case "mqtt": usesTLS = false
        case "mqtts": usesTLS = true
        default:
            throw invalid("has the scheme \"\(scheme)\"; only mqtt:// and mqtts:// are supported.")
        }
        var rest = text[schemeEnd.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.contains("@") {
            throw invalid("contains user information; give the username and password in the configuration instead.")
        }
        if rest.contains(where: { "/?#".contains($0) }) {
            throw invalid("has a path, query or fragment; only mqtt://host[:port] is accepted.")
        }
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw invalid("has an IPv6 address without its closing bracket.")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("has characters after the IPv6 address.") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw invalid("has no host name.") }
        if host.contains(where: { $0.isWhitespace }) { throw invalid("has a space in its host name.") }
        var port: Int?
        if let portText {
            guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(portText),
                (1...65535).contains(number)
            else {
                throw invalid("has the port \"\(portText)\"; a port is a number from 1 to 65535.")
            }
            port = number
        }
        self.init(host: String(host), port: port, usesTLS: usesTLS)
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(usesTLS ? "mqtts" : "mqtt")://\(shownHost):\(port)"
    }
}
