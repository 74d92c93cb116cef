import CMosquitto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one boundary between libmosquitto's integer codes and this module's errors and
// reason sentences.

extension MQTTError {
    /// The error for a failed libmosquitto call; `operation` completes "Cannot …",
    /// e.g. `publish to "a/b"`. Call right after the C function (MOSQ_ERR_ERRNO reads errno).
    static func mosquitto(_ rc: Int32, _ operation: String) -> MQTTError {
        let cause = Mosquitto.sentence(rc)
        switch mosq_err_t(rawValue: rc) {
        case MOSQ_ERR_MALFORMED_UTF8:
            return MQTTError(.invalidTopic, "Cannot \(operation): a topic or string is not valid UTF-8.")
        case MOSQ_ERR_PAYLOAD_SIZE, MOSQ_ERR_OVERSIZE_PACKET:
            return MQTTError(.payloadTooLarge, "Cannot \(operation): the payload is too large for MQTT.")
        case MOSQ_ERR_NO_CONN:
            return MQTTError(.notConnected, "Cannot \(operation): the client is not connected to the broker.")
        case MOSQ_ERR_CONN_REFUSED, MOSQ_ERR_AUTH, MOSQ_ERR_ACL_DENIED:
            return MQTTError(.refused, "Cannot \(operation): \(cause)")
        default:
            return MQTTError(.library, "Cannot \(operation): \(cause)")
        }
    }
}

enum Mosquitto {
    /// A sentence for a `MOSQ_ERR_*` code: libmosquitto's own text, ending with a period.
    /// For MOSQ_ERR_ERRNO that text is strerror(errno), so call this right away.
    static func sentence(_ rc: Int32) -> String {
        let text: String
        switch mosq_err_t(rawValue: rc) {
        case MOSQ_ERR_CONN_LOST:
            text = "The broker closed the connection"
        case MOSQ_ERR_KEEPALIVE:
            text = "The broker did not answer within the keep-alive interval"
        case MOSQ_ERR_NO_CONN:
            text = "The connection could not be established"
        case MOSQ_ERR_EAI:
            text = "The broker's host name could not be resolved"
        case MOSQ_ERR_TLS, MOSQ_ERR_TLS_HANDSHAKE:
            text = "The TLS handshake with the broker failed (check the CA file and the host name)"
        default:
            // Loaded: a code comes from a libmosquitto call.
            text = Libmosquitto.functionsIfLoaded?.strerror(rc).map { String(cString: $0) } ?? "libmosquitto error \(rc)"
        }
        return text.hasSuffix(".") ? text : text + "."
    }

    /// A sentence for an MQTT 3.1.1 CONNACK return code, e.g. "Connection Refused: not authorised."
    static func connackSentence(_ code: Int32) -> String {
        let text = Libmosquitto.functionsIfLoaded?.connack_string(code).map { String(cString: $0) } ?? "code \(code)"
        return "The broker refused the connection (\(text))."
    }
}
