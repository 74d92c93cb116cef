import Dispatch
import Glibc

/// The kernel's Bluetooth management interface (the HCI control channel that `btmgmt` and
/// bluetoothd itself speak, `doc/mgmt-api.txt`), for the one thing D-Bus does slowly:
/// taking an LE link down. `Device1.Disconnect` holds a connected device for bluetoothd's
/// `DISCONNECT_TIMER` (2 s, `src/device.c`) before the link goes; the management interface's
/// Disconnect takes it down in about 0.1 s, and bluetoothd follows it (`Connected=false`,
/// the device and its GATT objects kept, the next `Connect` resolving at once).
///
/// It needs `CAP_NET_ADMIN` and a Bluetooth socket in the initial network namespace. Where
/// the kernel is not the one behind BlueZ (a testbed whose bluetoothd runs in a VM), a relay
/// carries the same packets over a Unix stream socket.
public struct ManagementInterface: Sendable, Hashable {
    /// Where the management interface is reached.
    public enum Endpoint: Sendable, Hashable {
        /// This machine's kernel: a raw Bluetooth socket bound to the HCI control channel.
        case kernel
        /// A Unix stream socket relaying the packets to a kernel elsewhere (testbeds).
        case relay(path: String)
    }

    public let endpoint: Endpoint

    public init(_ endpoint: Endpoint) {
        self.endpoint = endpoint
    }

    /// A device's address type on the management interface (`BDADDR_LE_*`).
    public enum AddressType: UInt8, Sendable {
        case lePublic = 1
        case leRandom = 2

        /// From `Device1.AddressType` ("public" or "random").
        public init(bluez text: String?) {
            self = text == "random" ? .leRandom : .lePublic
        }
    }

    /// Why a management request did not do what was asked.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The interface cannot be reached: no Bluetooth socket here (no module, another
        /// network namespace), no permission (`CAP_NET_ADMIN`), or no relay.
        case unavailable(String)
        /// The kernel answered with a non-zero management status.
        case status(UInt8)
        /// No answer in time.
        case timeout

        public var description: String {
            switch self {
            case .unavailable(let why): "the kernel's Bluetooth management interface is not available: \(why)"
            case .status(let status): "the kernel refused the request: \(Self.statusName(status)) (status 0x\(hex(status)))"
            case .timeout: "the kernel's Bluetooth management interface did not answer in time"
            }
        }

        /// Whether the interface cannot serve any request here (as opposed to this one).
        public var interfaceUnavailable: Bool {
            switch self {
            case .unavailable: true
            case .status(let status): status == Self.permissionDenied
            case .timeout: false
            }
        }

        /// `MGMT_STATUS_NOT_CONNECTED`: the link is already down (kernels before 6.1's
        /// fix of Disconnect's Command Complete).
        public static let notConnected: UInt8 = 0x02
        /// `MGMT_STATUS_DISCONNECTED`: what Linux 6.1 (Debian 12) answers a Disconnect of a
        /// link that is already down (measured on the real lane).
        public static let disconnected: UInt8 = 0x0e
        /// `MGMT_STATUS_PERMISSION_DENIED`: the caller lacks `CAP_NET_ADMIN`.
        public static let permissionDenied: UInt8 = 0x14
        /// `MGMT_STATUS_TIMEOUT`: the kernel's command to the controller got no answer.
        public static let commandTimedOut: UInt8 = 0x08

        /// Whether the kernel refused a request without asking the controller: not
        /// supported, invalid parameters, not powered, invalid index, rfkilled, permission denied.
        public static func isKernelsRefusal(_ status: UInt8) -> Bool {
            [0x0c, 0x0d, 0x0f, 0x11, 0x12, permissionDenied].contains(status)
        }

        static func statusName(_ status: UInt8) -> String {
            switch status {
            case 0x01: "unknown command"
            case notConnected: "not connected"
            case 0x03: "failed"
            case 0x04: "connect failed"
            case commandTimedOut: "timeout"
            case 0x0a: "busy"
            case 0x0c: "not supported"
            case 0x0d: "invalid parameters"
            case 0x0f: "not powered"
            case 0x11: "invalid index"
            case disconnected: "disconnected"
            case 0x12: "rfkilled"
            case permissionDenied: "permission denied"
            default: "status \(status)"
            }
        }
    }

    /// Takes the link to `address` on controller `index` (hciN) down
    /// (`MGMT_OP_DISCONNECT`). The kernel answers once the teardown has started (the link
    /// is gone a few milliseconds later: wait for `Connected=false`). A link that is not up
    /// fails with ``Failure/status(_:)`` ``Failure/notConnected`` or ``Failure/disconnected``.
    public func disconnect(
        controller index: UInt16, address: String, type: AddressType, timeout: Duration = .seconds(3)
    ) async throws(Failure) {
        guard let bytes = Self.addressBytes(address) else { throw .status(0x0d) }
        try await send(Packet(code: Self.opDisconnect, index: index, parameters: bytes + [type.rawValue]), timeout: timeout)
    }

    /// Powers controller `index` (hciN) off or on through the kernel itself
    /// (`MGMT_OP_SET_POWERED`), whatever bluetoothd is waiting for: powering on resets the
    /// controller (HCI_Reset, then its setup again). The kernel answers once it is done, or
    /// refuses with a ``Failure/status(_:)``.
    public func setPowered(controller index: UInt16, _ on: Bool, timeout: Duration = .seconds(12)) async throws(Failure) {
        try await send(Packet(code: Self.opSetPowered, index: index, parameters: [on ? 1 : 0]), timeout: timeout)
    }

    /// Closes controller `index` (hciN) the way `hciconfig hciN down` does (the `HCIDEVDOWN`
    /// ioctl of a raw HCI socket): unlike ``setPowered(controller:_:timeout:)`` off, which
    /// the kernel gives up at the first command the controller does not answer (stopping
    /// its scan, ending its links), the close goes through whatever the controller answers,
    /// dropping its links. Powering it on afterwards resets it (HCI_Reset, then its setup).
    /// Through a relay, the relay closes it in the kernel it serves.
    public func closeController(_ index: UInt16, timeout: Duration = .seconds(20)) async throws(Failure) {
        switch endpoint {
        case .relay:
            try await send(Packet(code: Self.opRelayCloseController, index: index, parameters: []), timeout: timeout)
        case .kernel:
            try await Self.offThePool { () throws(Failure) in try Self.ioctlClose(index) }
        }
    }

    /// `HCIDEVDOWN` on a raw HCI socket of this machine's kernel (needs `CAP_NET_ADMIN`).
    private static func ioctlClose(_ index: UInt16) throws(Failure) {
        let fd = socket(afBluetooth, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), btprotoHCI)
        guard fd >= 0 else { throw .unavailable("a Bluetooth socket: \(errnoText())") }
        defer { Glibc.close(fd) }
        guard ioctl(fd, hciDeviceDown, CInt(index)) == 0 else {
            throw errno == EPERM || errno == EACCES ? .status(Failure.permissionDenied) : .unavailable("HCIDEVDOWN: \(errnoText())")
        }
    }

    /// Asks controller `index` (hciN) about its link to `address`
    /// (`MGMT_OP_GET_CONN_INFO`): the kernel reads the link's RSSI from the controller
    /// itself when what it has is older than a few seconds, so an answer shows the
    /// controller answers HCI commands. Returns the RSSI in dBm (nil when the controller
    /// does not know it); a controller that does not answer fails with ``Failure/timeout``
    /// or ``Failure/status(_:)`` `0x08` (the kernel's command timed out).
    public func connectionRSSI(
        controller index: UInt16, address: String, type: AddressType, timeout: Duration = .seconds(4)
    ) async throws(Failure) -> Int? {
        guard let bytes = Self.addressBytes(address) else { throw .status(0x0d) }
        let answer = try await send(
            Packet(code: Self.opGetConnectionInfo, index: index, parameters: bytes + [type.rawValue]), timeout: timeout)
        // Address (6), type (1), RSSI, TX power, max TX power (signed bytes; 127: not known).
        guard answer.count >= 8 else { return nil }
        let rssi = Int(Int8(bitPattern: answer[7]))
        return rssi == 127 ? nil : rssi
    }

    /// Asks the controller for its local clock (`MGMT_OP_GET_CLOCK_INFO` for `BDADDR_ANY`):
    /// the kernel sends it HCI Read Clock even when it has no link. Returns the kernel's
    /// status and how long the answer took. The time is what tells: Linux 6.1 answers
    /// `not connected` for `BDADDR_ANY` whatever the controller did (it looks up a link after
    /// reading the clock; measured on the real lane), in milliseconds from a controller that
    /// answers and after the kernel's HCI command timeout (2 s) from one that does not.
    public func readLocalClock(
        controller index: UInt16, timeout: Duration = .seconds(4)
    ) async throws(Failure) -> (status: UInt8, took: Duration) {
        let endpoint = self.endpoint
        // Address BDADDR_ANY (6 zero bytes), address type BR/EDR (0): the local clock only.
        let request = Packet(code: Self.opGetClockInfo, index: index, parameters: [UInt8](repeating: 0, count: 7))
        return try await Self.offThePool { () throws(Failure) in
            let started = ContinuousClock.now
            let (status, _) = try Self.exchange(request, at: endpoint, timeout: timeout)
            return (status, started.duration(to: .now))
        }
    }

    /// How long an answer to a command the kernel passes to the controller may take before
    /// it counts as the kernel's HCI command timeout (2 s) rather than the controller's answer.
    public static let commandTimeoutSign: Duration = .milliseconds(1500)

    /// Sends `request` on a channel of its own; throws unless its answer is a success, and
    /// returns the answer's parameters after its status.
    @discardableResult
    private func send(_ request: Packet, timeout: Duration) async throws(Failure) -> [UInt8] {
        let endpoint = self.endpoint
        let (status, answer) = try await Self.offThePool { () throws(Failure) in
            try Self.exchange(request, at: endpoint, timeout: timeout)
        }
        if status != 0 { throw .status(status) }
        return answer
    }

    /// Runs blocking socket I/O off the cooperative pool: on a serial queue of its own, which
    /// libdispatch runs on its overcommitting threads (a new one when those are busy). Not on
    /// `DispatchQueue.global()`: on Linux, Swift's global executor runs every task on that very
    /// pool, a thread per core; a command to a hung controller blocks for the kernel's 2 s, and
    /// two of them stalled every task of the daemon (calls answered 1.4 s past their deadline).
    private static func offThePool<T: Sendable>(
        _ body: @escaping @Sendable () throws(Failure) -> T
    ) async throws(Failure) -> T {
        let result: Result<T, Failure> = await withCheckedContinuation { continuation in
            DispatchQueue(label: "blefleet.management").async { continuation.resume(returning: Result(catching: body)) }
        }
        return try result.get()
    }

    // MARK: The protocol (doc/mgmt-api.txt)

    static let opDisconnect: UInt16 = 0x0014
    static let opSetPowered: UInt16 = 0x0005
    static let opGetConnectionInfo: UInt16 = 0x0031
    static let opGetClockInfo: UInt16 = 0x0032
    /// Not a kernel opcode: the testbed's relay closes the controller (`HCIDEVDOWN`) in the
    /// kernel it serves, and answers with a Command Complete for it.
    static let opRelayCloseController: UInt16 = 0xff02
    static let eventCommandComplete: UInt16 = 0x0001
    static let eventCommandStatus: UInt16 = 0x0002
    static let controllerNone: UInt16 = 0xffff

    /// One management packet: a 6-byte header (code, controller index, parameter length,
    /// little-endian) and its parameters.
    struct Packet: Equatable {
        var code: UInt16
        var index: UInt16
        var parameters: [UInt8]

        var bytes: [UInt8] {
            le(code) + le(index) + le(UInt16(parameters.count)) + parameters
        }

        init(code: UInt16, index: UInt16, parameters: [UInt8]) {
            self.code = code
            self.index = index
            self.parameters = parameters
        }

        /// Reads a whole packet; nil when `bytes` is not one.
        init?(_ bytes: [UInt8]) {
            guard bytes.count >= 6 else { return nil }
            let length = Int(UInt16(bytes[4]) | UInt16(bytes[5]) << 8)
            guard bytes.count == 6 + length else { return nil }
            code = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
            index = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
            parameters = Array(bytes[6...])
        }

        /// The status this packet gives for command `opcode`, when it is its answer
        /// (Command Complete or Command Status: opcode, then status).
        func status(answering opcode: UInt16) -> UInt8? {
            guard code == ManagementInterface.eventCommandComplete || code == ManagementInterface.eventCommandStatus,
                parameters.count >= 3, UInt16(parameters[0]) | UInt16(parameters[1]) << 8 == opcode
            else { return nil }
            return parameters[2]
        }
    }

    /// "AA:BB:CC:DD:EE:FF" as the kernel's `bdaddr_t`: the six bytes, least significant first.
    static func addressBytes(_ address: String) -> [UInt8]? {
        let parts = address.split(separator: ":")
        guard parts.count == 6 else { return nil }
        let bytes = parts.compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
        return bytes.count == 6 ? bytes.reversed() : nil
    }

    /// Sends `request` on a channel of its own and returns the status of its answer and
    /// the answer's parameters after it.
    private static func exchange(_ request: Packet, at endpoint: Endpoint, timeout: Duration) throws(Failure) -> (UInt8, [UInt8]) {
        let channel = try Channel(endpoint)
        defer { channel.close() }
        try channel.send(request)
        let deadline = ContinuousClock.now + timeout
        while true {
            // The control channel also carries events for everyone (a device disconnected…).
            let packet = try channel.receive(until: deadline)
            if let status = packet.status(answering: request.code) {
                return (status, packet.code == eventCommandComplete ? Array(packet.parameters.dropFirst(3)) : [])
            }
        }
    }
}

/// One open management channel: a raw Bluetooth socket on the HCI control channel (one
/// packet per read) or a relay's stream socket (packets framed by their header).
private struct Channel {
    let fd: Int32
    let stream: Bool

    init(_ endpoint: ManagementInterface.Endpoint) throws(ManagementInterface.Failure) {
        switch endpoint {
        case .kernel:
            let fd = socket(afBluetooth, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), btprotoHCI)
            guard fd >= 0 else { throw .unavailable("a Bluetooth socket: \(errnoText())") }
            var address = SockaddrHCI(family: sa_family_t(afBluetooth), device: ManagementInterface.controllerNone, channel: hciChannelControl)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<SockaddrHCI>.size))
                }
            }
            guard bound == 0 else {
                let why = errnoText()
                Glibc.close(fd)
                throw .unavailable("the HCI control channel: \(why)")
            }
            self.fd = fd
            self.stream = false
        case .relay(let path):
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw .unavailable("a Unix socket: \(errnoText())") }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let capacity = MemoryLayout.size(ofValue: address.sun_path)
            guard path.utf8.count < capacity else {
                Glibc.close(fd)
                throw .unavailable("the relay's path is longer than \(capacity - 1) bytes")
            }
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: Array(path.utf8) + [0])
            }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard connected == 0 else {
                let why = errnoText()
                Glibc.close(fd)
                throw .unavailable("the relay \(path): \(why)")
            }
            self.fd = fd
            self.stream = true
        }
    }

    func close() {
        Glibc.close(fd)
    }

    func send(_ packet: ManagementInterface.Packet) throws(ManagementInterface.Failure) {
        let bytes = packet.bytes
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw .unavailable("writing the request: \(errnoText())") }
    }

    func receive(until deadline: ContinuousClock.Instant) throws(ManagementInterface.Failure) -> ManagementInterface.Packet {
        if stream {
            let header = try read(exactly: 6, until: deadline)
            let length = Int(UInt16(header[4]) | UInt16(header[5]) << 8)
            let parameters = try read(exactly: length, until: deadline)
            guard let packet = ManagementInterface.Packet(header + parameters) else { throw .unavailable("a malformed packet") }
            return packet
        }
        try wait(until: deadline)
        var buffer = [UInt8](repeating: 0, count: 6 + Int(UInt16.max))
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw .unavailable("reading the answer: \(count == 0 ? "closed" : errnoText())") }
        guard let packet = ManagementInterface.Packet(Array(buffer[..<count])) else { throw .unavailable("a malformed packet") }
        return packet
    }

    private func read(exactly count: Int, until deadline: ContinuousClock.Instant) throws(ManagementInterface.Failure) -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            try wait(until: deadline)
            var chunk = [UInt8](repeating: 0, count: count - bytes.count)
            let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard got > 0 else { throw .unavailable("the relay closed the connection") }
            bytes += chunk[..<got]
        }
        return bytes
    }

    /// Returns when the socket is readable; throws at the deadline.
    private func wait(until deadline: ContinuousClock.Instant) throws(ManagementInterface.Failure) {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timeout }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(max(1, (left / .milliseconds(1)).rounded(.up)))
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw .unavailable("waiting for the answer: \(errnoText())") }
        }
    }
}

/// `struct sockaddr_hci` (`<bluetooth/hci.h>`), which no system header here declares.
private struct SockaddrHCI {
    var family: sa_family_t
    var device: UInt16
    var channel: UInt16
}

private let afBluetooth: Int32 = 31  // AF_BLUETOOTH
private let btprotoHCI: Int32 = 1  // BTPROTO_HCI
private let hciChannelControl: UInt16 = 3  // HCI_CHANNEL_CONTROL
private let hciDeviceDown: UInt = 0x4004_48ca  // HCIDEVDOWN: _IOW('H', 202, int)

private func errnoText() -> String {
    String(cString: strerror(errno))
}

private func le(_ value: UInt16) -> [UInt8] {
    [UInt8(value & 0xff), UInt8(value >> 8)]
}

private func hex(_ value: UInt8) -> String {
    (value < 0x10 ? "0" : "") + String(value, radix: 16)
}
