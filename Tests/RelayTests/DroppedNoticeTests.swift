import Foundation
import Testing

@testable import Relay

/// The bound on what a dropped notice names, checked on a subscription directly: reaching it through a DataPoint
/// takes more events than a test should.
@Suite("S13 dropped notices")
struct DroppedNoticeTests {
    @Test("S13: a dropped notice names at most maximumFinished operations, and says when it names fewer than finished")
    func droppedNoticeIsBounded() async throws {
        let subscription = EventSubscription(capacity: 1)
        let finished = (0...DroppedEvents.maximumFinished).map { index in
            CallEvent(
                sequenceNumber: UInt64(index + 1), date: Date(), operationID: UUID(), sequenceName: .data,
                kind: .skipped(CallMetrics(enqueuedAt: Date())))
        }
        _ = subscription.receive(finished)
        _ = subscription.receive([
            CallEvent(
                sequenceNumber: 1 << 40, date: Date(), operationID: nil, sequenceName: nil, kind: .resumed(reason: ""))
        ])
        var taken = EventSubscription.Taken()
        #expect(await subscription.nextBatch(into: &taken))
        guard case .dropped(let dropped) = taken.batches.first?.first?.kind.value else {
            Issue.record("expected the dropped notice first")
            return
        }
        #expect(dropped.count == finished.count)
        #expect(dropped.finished == finished.prefix(DroppedEvents.maximumFinished).compactMap(\.operationID))
        #expect(!dropped.namesEveryFinished)
    }
}
