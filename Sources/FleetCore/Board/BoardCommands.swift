import BlueZ
import Logging

/// What a user's call does on one board: it waits for the board's ready link
/// (``Board/whenReady(_:)``: connected on demand, retried when the link falls), works through
/// that link's session (``BoardSession``: its characteristics, its GATT calls one at a time),
/// and tells the board what it changed (the LED written, a switch left mid-blink). It keeps
/// nothing: the session is the board's.
struct BoardCommands: Sendable {
    let board: Board

    private var address: BoardAddress { board.address }
    private var client: BlueZClient { board.context.client }

    /// Switches one of the profile's switches (write with response); the board is told what
    /// its link carries now (``BoardCore/switchWritten(_:on:link:now:)``). The LED as a user
    /// wants it is the board's to keep (``BoardCore/want(led:)``, told by ``Fleet/setSwitch(_:name:on:timeout:)``).
    func setSwitch(_ name: String, on: Bool) async throws {
        let address = self.address
        try await board.whenReady { session in
            let item = try session.profile.characteristic(name, .switch, of: address)
            guard item.access.contains(.write) else {
                throw FleetError(
                    .invalidArgument,
                    "The \(name) switch of \(address) cannot be written (its profile \(session.profile.name) says \(item.accessText)).")
            }
            let handle = try await session.handle(of: item)
            try await session.call { try await client.writeValue(item.encode(on: on), to: handle, type: .request) }
            await board.update { $0.switchWritten(name, on: on, link: session.link, now: $1) }
        }
    }

    /// Shows which physical board this is: blinks its LED (or its profile's first writable
    /// switch) ``BoardGATT/identifyBlinks`` times, then puts it back as it was wanted (off when
    /// nothing was asked). A board without a link (in standby: every slot taken) is connected
    /// for it, and gives its slot back after (unless a call or a reading uses the link by
    /// then: the rotation takes it back when another board needs it). Its outcome is the
    /// board's, like a switch's. A blink cut short is put back all the same, on this link or
    /// the next (``Board/blinkCutShort()``).
    func identify() async throws {
        let (ready, profile) = await board.linkAndProfile
        let item = try profile.identifySwitch(of: address)
        do {
            try await board.whenReady { session in
                let handle = try await session.handle(of: item)
                await board.update { core, _ in core.blinkStarts(item.name) }
                for half in 0..<(2 * BoardGATT.identifyBlinks) {
                    let on = half % 2 == 0
                    try await session.call { try await client.writeValue(item.encode(on: on), to: handle, type: .request) }
                    try await board.clock.sleep(for: BoardGATT.identifyHalfBlink)
                }
                // As wanted now (a call may have switched the LED meanwhile).
                let wanted = await board.switches.wantsOn(item.name)
                try await session.call { try await client.writeValue(item.encode(on: wanted), to: handle, type: .request) }
                await board.update { $0.blinkEnded(item.name, wanted: wanted, link: session.link, now: $1) }
            }
        } catch {
            await board.blinkCutShort()
            throw error
        }
        if !ready { _ = await board.release() }
    }

    /// A sensor's value: the latest one when younger than `maxAge`, else read from the board
    /// (a sensor the board only notifies waits for its next value).
    func readSensor(_ name: String, maxAge: Duration) async throws -> SensorValue {
        let address = self.address
        let profile = await board.profile
        let sensor = try profile.characteristic(name, .sensor, of: address)
        let live = board.live
        let now = board.clock.now
        if let cached = live.reading(name), cached.age(at: now) <= maxAge {
            return SensorValue(sensor: name, value: cached.value, unit: sensor.unit, decimals: sensor.decimals, age: cached.age(at: now))
        }
        guard sensor.access.contains(.read) else {
            return try await nextNotified(sensor)
        }
        let bytes = try await board.whenReady { session in
            let handle = try await session.handle(of: try session.profile.characteristic(name, .sensor, of: address))
            return try await session.call { try await client.readValue(handle) }
        }
        guard let reading = await board.record(bytes, of: sensor) else {
            throw FleetError(
                .gattError,
                "\(address) sent its \(name) as \(bytes.count) bytes; its profile \(profile.name) says \(sensor.format.rawValue) (\(sensor.format.size)).")
        }
        return SensorValue(sensor: name, value: reading.value, unit: sensor.unit, decimals: sensor.decimals, age: .zero)
    }

    /// The next notified value of a sensor that cannot be read (the caller's deadline bounds it).
    private func nextNotified(_ sensor: BoardProfile.Characteristic) async throws -> SensorValue {
        let live = board.live
        let before = live.reading(sensor.name)?.receivedAt
        try await board.whenReady { _ in }
        while true {
            let generation = live.readingArrived.generation
            if let reading = live.reading(sensor.name), reading.receivedAt != before {
                return SensorValue(
                    sensor: sensor.name, value: reading.value, unit: sensor.unit, decimals: sensor.decimals,
                    age: reading.age(at: board.clock.now))
            }
            await live.readingArrived.wait(after: generation)
            try Task.checkCancellation()
        }
    }

    /// The temperature: the built-in sensor `temperature`, in whole degrees.
    func readTemperature(maxAge: Duration) async throws -> TemperatureReading {
        let value = try await readSensor(BoardProfile.temperatureSensor, maxAge: maxAge)
        return TemperatureReading(value: Celsius(degrees: Int(value.value.rounded(.down))), age: value.age)
    }

    /// Reads any characteristic by service and characteristic UUID.
    func readCharacteristic(service: BluetoothUUID, characteristic: BluetoothUUID) async throws -> [UInt8] {
        try await board.whenReady { session in
            let found = try await session.gatt.lookUp(service: service, characteristic: characteristic, on: session.device)
            return try await session.call { try await client.readValue(found) }
        }
    }

    /// Writes any characteristic by service and characteristic UUID.
    func writeCharacteristic(
        service: BluetoothUUID, characteristic: BluetoothUUID, value: [UInt8], withResponse: Bool
    ) async throws {
        try await board.whenReady { session in
            let found = try await session.gatt.lookUp(service: service, characteristic: characteristic, on: session.device)
            try await session.call {
                try await client.writeValue(value, to: found, type: withResponse ? .request : .command)
            }
        }
    }

    /// Subscribes to any characteristic's notifications; the stream ends when the link drops.
    func notifications(service: BluetoothUUID, characteristic: BluetoothUUID) async throws -> BlueZValueStream {
        try await board.whenReady { session in
            let found = try await session.gatt.lookUp(service: service, characteristic: characteristic, on: session.device)
            return try await session.call { try await client.notifications(found) }
        }
    }

    /// Puts a switch back as the board wants it through `session`'s link, as the board's own
    /// work (``Board/putSwitchesBack(link:)``): a failure is said as it is, none waited out as
    /// a link's loss.
    func putBack(_ item: BoardProfile.Characteristic, on: Bool, to handle: BlueZCharacteristic, through session: BoardSession) async {
        do {
            try await session.gatt.queue.withPermit { try await client.writeValue(item.encode(on: on), to: handle, type: .request) }
            await board.switchPutBack(item, on: on, link: session.link, error: nil)
        } catch {
            await board.switchPutBack(item, on: on, link: session.link, error: error)
        }
    }

    /// Connects (if needed) for a user.
    func connect() async throws {
        try await board.whenReady { _ in }
    }
}
