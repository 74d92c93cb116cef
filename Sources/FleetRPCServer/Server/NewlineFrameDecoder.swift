import NIOCore

/// Splits a byte stream into newline-terminated frames (a trailing `\r` is dropped, blank
/// lines are skipped), refusing any frame longer than `maximumFrameBytes` before it is
/// buffered whole. Bytes left at end of input without a newline form a last frame.
struct NewlineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct FrameTooLarge: Error {
        let limit: Int
    }

    let maximumFrameBytes: Int
    private var scanned = 0

    init(maximumFrameBytes: Int) {
        self.maximumFrameBytes = maximumFrameBytes
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        let start = view.startIndex
        guard let newline = view[(start + scanned)...].firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = view.count
            if view.count > maximumFrameBytes { throw FrameTooLarge(limit: maximumFrameBytes) }
            return .needMoreData
        }
        scanned = 0
        var length = newline - start
        if length > maximumFrameBytes + 1 { throw FrameTooLarge(limit: maximumFrameBytes) }
        var frame = buffer.readSlice(length: length + 1)!
        if length > 0, view[newline - 1] == UInt8(ascii: "\r") { length -= 1 }
        frame = frame.getSlice(at: frame.readerIndex, length: length)!
        if length > maximumFrameBytes { throw FrameTooLarge(limit: maximumFrameBytes) }
        if !frame.readableBytesView.allSatisfy(NewlineFrameDecoder.isWhitespace) {
            context.fireChannelRead(Self.wrapInboundOut(frame))
        }
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            let frame = buffer.readSlice(length: buffer.readableBytes)!
            scanned = 0
            if !frame.readableBytesView.allSatisfy(NewlineFrameDecoder.isWhitespace) {
                context.fireChannelRead(Self.wrapInboundOut(frame))
            }
        }
        return .needMoreData
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }
}
