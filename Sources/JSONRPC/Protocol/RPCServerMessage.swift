/// A frame a client receives from the server, as far as routing it needs: the reply's id,
/// or the notification's method. The frame's bytes are then decoded once more with the
/// type the caller expects (``RPCTypedResponse``, ``RPCTypedNotification``).
public enum RPCServerMessage: Sendable, Hashable {
    /// A reply to the request with this id (`.null`: a frame the server could not read).
    case response(id: RPCID, error: RPCError?)
    /// A batch reply (this client never sends batches; kept so it can say so).
    case batch
    /// A server→client notification.
    case notification(method: String)

    /// Reads the envelope of a frame sent by the server.
    public init(parsing bytes: some Collection<UInt8>) throws {
        self = try JSONCodec.decode(Envelope.self, from: bytes).message
    }

    private struct Envelope: Decodable {
        let message: RPCServerMessage

        private enum CodingKeys: String, CodingKey {
            case jsonrpc, method, id, error
        }

        init(from decoder: any Decoder) throws {
            guard let container = try? decoder.container(keyedBy: CodingKeys.self) else {
                _ = try decoder.unkeyedContainer()
                message = .batch
                return
            }
            guard try container.decode(String.self, forKey: .jsonrpc) == "2.0" else {
                throw DecodingError.dataCorruptedError(
                    forKey: .jsonrpc, in: container, debugDescription: "\"jsonrpc\" must be \"2.0\".")
            }
            if let method = try container.decodeIfPresent(String.self, forKey: .method) {
                message = .notification(method: method)
            } else {
                message = .response(
                    id: try container.decode(RPCID.self, forKey: .id),
                    error: try container.decodeIfPresent(RPCError.self, forKey: .error))
            }
        }
    }
}
