import Foundation
import RelayTesting
import Testing

@testable import Relay

@Suite("S14 metrics across a restart", .timeLimit(.minutes(3)))
struct MetricsRestartTests {
    /// Runs five operations that each take 2 ms of `clock`, and returns their ids.
    private static func runFive(on point: DataPoint, clock: ManualClock) async throws -> [UUID] {
        point.register(
            ClosureExecutor { _, _ in
                clock.advance(by: .milliseconds(2))
                return .completed(Data())
            }, for: "slow")
        var ids: [UUID] = []
        for _ in 0..<5 {
            let handle = try await point.enqueue(CallOperation(kind: "slow"))
            _ = try await handle.value
            ids.append(handle.id)
        }
        return ids
    }

    private static func close(_ one: Duration?, _ other: Duration?) -> Bool {
        guard let one, let other else { return false }
        return abs((one - other).relayNanoseconds) < 1_000
    }

    @Test(
        "S14: finished operations keep their metrics and the percentiles their samples across a restart",
        arguments: [false, true])
    func metricsSurvive(crash: Bool) async throws {
        try await withTemporaryFolder { folder in
            let clock = ManualClock()
            let point = try await DataPoint(storage: .file(at: folder.url), clock: clock)
            let engine = Task { try await point.run() }
            let ids = try await Self.runFive(on: point, clock: clock)
            let before = point.metrics()
            let operationBefore = try #require(try await point.status(of: ids[0])?.metrics)
            if crash {
                // The journal, not a snapshot, then holds what reopening reads.
                await point.crash()
            } else {
                try await point.shutdown()
            }
            try? await engine.value

            let reopened = try await DataPoint(storage: .file(at: folder.url), clock: clock)
            let after = reopened.metrics()
            let operationAfter = try #require(try await reopened.status(of: ids[0])?.metrics)
            #expect(operationAfter.runTime == operationBefore.runTime)
            #expect(operationAfter.runTime == .milliseconds(2))
            // Dates are stored to the microsecond or so; run times to the nanosecond.
            #expect(Self.close(operationAfter.queueWait, operationBefore.queueWait))
            #expect(after.total.completed == 5)
            #expect(after.runTime.samples == 5)
            #expect(after.queueWait.samples == 5)
            #expect(after.runTime.p50 == before.runTime.p50)
            #expect(Self.close(after.queueWait.p99, before.queueWait.p99))
            try await reopened.shutdown()
        }
    }
}
