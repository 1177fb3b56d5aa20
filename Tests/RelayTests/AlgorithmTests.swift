import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S7 algorithm per sequence", .timeLimit(.minutes(3)))
struct AlgorithmTests {
    /// Runs commit 1 with a slow operation and commit 2 with a quick one.
    ///
    /// Bunch size 2 leaves room for both.
    private func run(_ algorithm: CallSequence.Algorithm) async throws -> (quickStartedBeforeSlowFinished: Bool, Void) {
        let gate = Gate()
        return try await withManualPoint { point, _ in
            point.registerGated(gate)
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2, algorithm: algorithm))
            let recorder = EventRecorder(point)
            let slow = try await point.enqueue(CallOperation(kind: .gated))
            await gate.waitForArrivals(1)
            let quick = try await point.enqueue(CallOperation(kind: .noop))
            await point.settled()
            let quickStarted = recorder.startOrder().contains(quick.id)
            if algorithm == .commitGraph {
                #expect(try await point.status(of: quick.id)?.state == .pending(.earlierCommit))
            }
            gate.open()
            _ = try await slow.value
            _ = try await quick.value
            return (quickStarted, ())
        }
    }

    @Test("S7: .flat starts a later commit's ready operation while an earlier commit runs")
    func flatDoesNotWaitForEarlierCommits() async throws {
        #expect(try await run(.flat).quickStartedBeforeSlowFinished)
    }

    @Test("S7: .commitGraph starts nothing of a later commit until earlier commits in the sequence finished")
    func commitGraphWaitsForEarlierCommits() async throws {
        #expect(try await !run(.commitGraph).quickStartedBeforeSlowFinished)
    }

    @Test("S7: .commitGraph against .flat on the same workload: same outcomes, commit-ordered starts")
    func sameWorkloadBothAlgorithms() async throws {
        for algorithm in [CallSequence.Algorithm.flat, .commitGraph] {
            try await withManualPoint { point, _ in
                // One worker, so that started events come in the order operations start: a worker that claims a
                // batch reports the start of each operation behind the first once it has run it.
                try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 1, algorithm: algorithm))
                let recorder = EventRecorder(point)
                try await point.suspend()
                var commits: [[CallOperation]] = []
                for commit in 0..<10 {
                    // Later commits carry higher priorities, which .commitGraph must not let jump ahead.
                    let batch = (0..<5).map { _ in CallOperation(kind: .noop, priority: commit) }
                    commits.append(batch)
                    try await point.enqueue(batch)
                }
                try await point.resume()
                await recorder.waitForTerminals(50)
                let order = recorder.startOrder()
                let commitOf = Dictionary(
                    uniqueKeysWithValues: commits.enumerated().flatMap { index, batch in batch.map { ($0.id, index) } }
                )
                let startedCommits = order.map { commitOf[$0]! }
                #expect(point.metrics().total.completed == 50)
                switch algorithm.value {
                case .commitGraph:
                    #expect(startedCommits == startedCommits.sorted())
                case .flat:
                    #expect(startedCommits == startedCommits.sorted(by: >))
                }
            }
        }
    }

    @Test("S7: .commitGraph is per sequence: another sequence's earlier commit does not block")
    func commitGraphIsPerSequence() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            try await point.upsertCallSequence(CallSequence(name: .data, algorithm: .commitGraph))
            let slow = try await point.enqueue(CallOperation(kind: .gated, sequenceName: .downloads))
            await gate.waitForArrivals(1)
            let next = try await point.enqueue(CallOperation(kind: .echo))
            #expect(try await next.value == Data())
            gate.open()
            _ = try await slow.value
        }
    }

    @Test("S7: switching a sequence from .commitGraph to .flat releases waiting operations")
    func switchingAlgorithm() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            let data = try await point.upsertCallSequence(
                CallSequence(name: .data, bunchSize: 2, algorithm: .commitGraph))
            let slow = try await point.enqueue(CallOperation(kind: .gated))
            await gate.waitForArrivals(1)
            let quick = try await point.enqueue(CallOperation(kind: .echo))
            await point.settled()
            #expect(try await point.status(of: quick.id)?.state == .pending(.earlierCommit))
            try await data.setAlgorithm(.flat)
            #expect(try await quick.value == Data())
            try await data.setAlgorithm(.commitGraph)
            gate.open()
            _ = try await slow.value
        }
    }

    @Test("S7: switching to .commitGraph holds back ready operations of later commits")
    func switchingToCommitGraphHoldsBackReadyOperations() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            let data = try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2))
            try await data.suspend()
            let slow = try await point.enqueue(CallOperation(kind: .gated))
            let later = try await point.enqueue(CallOperation(kind: .echo))
            try await data.setAlgorithm(.commitGraph)
            try await data.resume()
            await gate.waitForArrivals(1)
            await point.settled()
            #expect(try await later.status?.state == .pending(.earlierCommit))
            gate.open()
            _ = try await slow.value
            #expect(try await later.value == Data())
        }
    }
}
