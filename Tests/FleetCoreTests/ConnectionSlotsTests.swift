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

    @Test func aReleaseUnderWayIsWaitedForRatherThanAnotherBoardReleased() {
        var links = (1...7).map { link($0, usedAt: $0) }
        links[3].isLeaving = true
        #expect(ConnectionSlots.decide(for: address(20), links: links, limit: 7) == .noSlot)
    }

    @Test func queuedBoardsGetTheOldestIdleLinksReleasedAhead() {
        // 7 links (board 1 busy), 3 boards queued for calls: 3 idle ones go, oldest first.
        let links = (1...7).map { link($0, usedAt: $0, busy: $0 == 1) }
        #expect(
            ConnectionSlots.releaseAhead(links: links, limit: 7, waiting: 3) == [address(2), address(3), address(4)])
    }

    @Test func releasesUnderWayAndFreeSlotsCountAgainstTheQueue() {
        // 6 links on 7 slots, one of them leaving: 2 slots are (about to be) free for 3 boards.
        var links = (1...6).map { link($0, usedAt: $0) }
        links[0].isLeaving = true
        #expect(ConnectionSlots.releaseAhead(links: links, limit: 7, waiting: 3) == [address(2)])
        #expect(ConnectionSlots.releaseAhead(links: links, limit: 7, waiting: 2) == [])
    }

    @Test func releasingAheadNeverTakesABusyBoardAndIsBoundedByTheIdleOnes() {
        let links = (1...4).map { link($0, usedAt: $0, busy: $0 <= 2) }
        #expect(ConnectionSlots.releaseAhead(links: links, limit: 4, waiting: 10) == [address(3), address(4)])
    }

    @Test func nothingIsReleasedAheadWithoutAQueue() {
        let links = (1...7).map { link($0, usedAt: $0) }
        #expect(ConnectionSlots.releaseAhead(links: links, limit: 7, waiting: 0) == [])
    }
}
