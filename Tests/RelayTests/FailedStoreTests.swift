import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

/// Counts an executor's runs.
private final class Runs: Sendable {
    let count = Mutex(0)
}

/// A store that fails a write: what the write carried never happens, and nothing more starts on a store that can no
/// longer record it.
@Suite("S16 a store that fails", .timeLimit(.minutes(3)))
struct FailedStoreTests {
    @Test("S16/S20: an operation whose enqueue failed to be written never runs; its status says the store failed")
    func failedEnqueueNeverRuns() async throws {
        let storage = GatedStorage()
        let runs = Runs()
        try await DataPoint.with(storage: storage) { point in
            point.register(
                ClosureExecutor { _, _ in
                    runs.count.withLock { $0 += 1 }
                    return .completed(Data())
                }, for: "work")
            storage.failWrites(with: RelayError(.storageFailure, "the disk is gone"))
            let operation = CallOperation(kind: "work")
            let error = await #expect(throws: RelayError.self) { try await point.enqueue(operation) }
            #expect(error?.code == .storageFailure)
            try await point.idle()
            #expect(runs.count.withLock { $0 } == 0)
            let state = try await point.status(of: operation.id)?.state
            #expect(state == .pending(.storeFailed("the disk is gone")), "\(String(describing: state))")
            #expect(state.map { "\($0)" } == "pending (the store failed, nothing more starts: the disk is gone)")
            if case .pending(let waiting) = state {
                #expect(waiting.name == "storeFailed")
                #expect(waiting.reason == "the disk is gone")
            }
        }
    }

    @Test("S16: a busy worker that claims an operation while the store fails its write never runs it")
    func busyWorkerNeverRunsWhatTheStoreLost() async throws {
        let storage = GatedStorage()
        let runs = Runs()
        let first = Gate()
        try await DataPoint.with(storage: storage) { point in
            point.registerGated(first)
            point.register(
                ClosureExecutor { _, _ in
                    runs.count.withLock { $0 += 1 }
                    return .completed(Data())
                }, for: "work")
            // The data sequence's one worker is busy with the gated operation.
            let busy = try await point.enqueue(CallOperation(kind: .gated))
            await first.waitForArrivals(1)
            storage.holdDurability()
            storage.failWrites(with: RelayError(.storageFailure, "the disk is gone"))
            let operation = CallOperation(kind: "work")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let error = await #expect(throws: RelayError.self) { try await point.enqueue(operation) }
                    #expect(error?.code == .storageFailure)
                }
                // The commit is applied and waits for its write; the worker ends the gated operation and claims this
                // one in one step, whose write waits too. Then both writes fail.
                await storage.durable.waitForArrivals(1)
                first.open()
                await storage.durable.waitForArrivals(2)
                storage.durable.open()
                try await group.waitForAll()
            }
            try await point.idle()
            #expect(runs.count.withLock { $0 } == 0)
            let state = try await point.status(of: operation.id)?.state
            #expect(state == .pending(.storeFailed("the disk is gone")), "\(String(describing: state))")
            let busyOutcome = try? await busy.outcome
            #expect(busyOutcome == nil, "the gated operation's end was not written either")
        }
    }
}
