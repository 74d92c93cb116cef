import Foundation
import Testing

@testable import FleetCore

@Suite struct ConnectionSlotsTests {
    let t0 = ContinuousClock.now

    func address(_ n: Int) -> BoardAddress { BoardAddress(String(format: "02:00:00:00:00:%02X", n))! }

    func link(_ n: Int, usedAt seconds: Int, busy: Bool = false) -> ConnectionSlots.Link {
        .init(address: address(n), lastUsed: t0 + .seconds(seconds), isBusy: busy)
    }

    @Test func freeSlotIsAvailable() {
        let links = [link(1, usedAt: 0), link(2, usedAt: 1)]
        #expect(ConnectionSlots.decide(for: address(3), links: links, limit: 3) == .available)
    }

    @Test func alreadyConnectedBoardNeedsNoNewSlot() {
        let links = [link(1, usedAt: 0), link(2, usedAt: 1)]
        #expect(ConnectionSlots.decide(for: address(2), links: links, limit: 2) == .available)
    }

    @Test func evictsTheLeastRecentlyUsedIdleBoard() {
        let links = [link(1, usedAt: 5), link(2, usedAt: 1, busy: true), link(3, usedAt: 2), link(4, usedAt: 9)]
        // Board 2 is older but busy: board 3 goes.
        #expect(ConnectionSlots.decide(for: address(7), links: links, limit: 4) == .evict([address(3)]))
    }

    @Test func noSlotWhenEveryBoardIsBusy() {
        let links = [link(1, usedAt: 0, busy: true), link(2, usedAt: 1, busy: true)]
        #expect(ConnectionSlots.decide(for: address(3), links: links, limit: 2) == .noSlot)
    }

    @Test func overTheLimitEvictsDownToTheLimitLeastRecentlyUsedFirst() {
        // More links than the limit (limit lowered at runtime): down to it, and one for the board.
        let links = (1...9).map { link($0, usedAt: 10 - $0) }
        #expect(
            ConnectionSlots.decide(for: address(20), links: links, limit: 7)
                == .evict([address(9), address(8), address(7)]))
    }

    @Test func boardsQueuedBehindGetTheirSlotsFreedInTheSameBatch() {
        // 7 links, 3 more boards queued behind this one: 4 idle boards go at once, oldest first.
        let links = (1...7).map { link($0, usedAt: $0, busy: $0 == 1) }
        #expect(
            ConnectionSlots.decide(for: address(20), links: links, limit: 7, queued: 3)
                == .evict([address(2), address(3), address(4), address(5)]))
    }

    @Test func aBatchNeverReleasesABusyBoardAndIsBoundedByTheIdleOnes() {
        let links = (1...4).map { link($0, usedAt: $0, busy: $0 <= 2) }
        #expect(
            ConnectionSlots.decide(for: address(20), links: links, limit: 4, queued: 10)
                == .evict([address(3), address(4)]))
    }

    @Test func aFreeSlotReleasesNothingEvenWithBoardsQueued() {
        let links = (1...3).map { link($0, usedAt: $0) }
        #expect(ConnectionSlots.decide(for: address(20), links: links, limit: 4, queued: 5) == .available)
    }
}
