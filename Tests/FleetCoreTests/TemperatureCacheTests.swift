import Testing

@testable import FleetCore

@Suite struct TemperatureCacheTests {
    let t0 = ContinuousClock.now
    let board = BoardAddress("02:00:00:00:00:01")!
    let other = BoardAddress("02:00:00:00:00:02")!

    @Test func freshUntilMaxAgeThenStale() {
        var cache = TemperatureCache(maxAge: .seconds(10))
        #expect(cache.fresh(for: board, now: t0) == nil)
        cache.record(Celsius(degrees: 21), for: board, at: t0)
        #expect(cache.fresh(for: board, now: t0 + .seconds(10))?.value == Celsius(degrees: 21))
        #expect(cache.fresh(for: board, now: t0 + .seconds(10) + .milliseconds(1)) == nil)
        #expect(cache.latest(for: board)?.value == Celsius(degrees: 21))
        #expect(cache.fresh(for: other, now: t0) == nil)
        // A caller can ask for a tighter bound.
        #expect(cache.fresh(for: board, now: t0 + .seconds(3), maxAge: .seconds(2)) == nil)
        #expect(cache.latest(for: board)?.age(at: t0 + .seconds(3)) == .seconds(3))
    }

    @Test func olderReadingNeverReplacesANewerOne() {
        var cache = TemperatureCache(maxAge: .seconds(10))
        cache.record(Celsius(degrees: 22), for: board, at: t0 + .seconds(5))
        cache.record(Celsius(degrees: 20), for: board, at: t0 + .seconds(1))
        #expect(cache.latest(for: board)?.value == Celsius(degrees: 22))
        cache.record(Celsius(degrees: 23), for: board, at: t0 + .seconds(6))
        #expect(cache.latest(for: board)?.value == Celsius(degrees: 23))
        cache.remove(board)
        #expect(cache.latest(for: board) == nil)
    }
}
