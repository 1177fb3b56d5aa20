import Foundation
import Testing

@testable import Relay

/// S16: a store's replay forgets finished operations as its retention policy lets them go, so that folding a long
/// journal holds about what the DataPoint holds.
@Suite("S16 replay under a retention policy")
struct ReplayRetentionTests {
    private func records(finishing count: Int) -> (operations: [CallOperation], records: [StorageRecord]) {
        let start = Date(timeIntervalSince1970: 1_000)
        let operations = (0..<count).map { _ in CallOperation(kind: "noop") }
        var records = [StorageRecord(.commit(snapshot: 1, operations: operations, at: start))]
        for (index, operation) in operations.enumerated() {
            records.append(
                StorageRecord.finished(operation.id, .skipped, at: start.addingTimeInterval(Double(index + 1))))
        }
        return (operations, records)
    }

    @Test("S16: a replay keeps the newest finished operations within the policy's bounds, and pending ones")
    func replayKeepsWithinBounds() {
        let (operations, finishing) = records(finishing: 5_000)
        let pending = CallOperation(kind: "noop")
        var replay = StoredState.Replay(retention: RetentionPolicy(maximumOperations: 3))
        replay.apply(StorageRecord(.commit(snapshot: 0, operations: [pending], at: Date(timeIntervalSince1970: 999))))
        for record in finishing { replay.apply(record) }
        let state = replay.state()
        #expect(state.operations.map(\.operation.id) == [pending.id] + operations.suffix(3).map(\.id))
    }

    @Test("S16: with a window of zero, a replay keeps no finished operation")
    func zeroWindowKeepsNone() {
        let (_, finishing) = records(finishing: 3_000)
        var replay = StoredState.Replay(retention: .window(.zero))
        for record in finishing { replay.apply(record) }
        #expect(replay.state().operations.isEmpty)
    }
}
