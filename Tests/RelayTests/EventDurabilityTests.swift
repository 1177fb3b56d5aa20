import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

/// A store whose waits for durability, once the test closes it, hold at a gate until the test opens it, and then
/// succeed, or fail as a write that did not reach the disk.
final class GatedStorage: Storage {
    let durable = Gate()
    private let appended = Mutex<UInt64>(0)
    private let holding = Mutex(false)
    private let failure = Mutex<RelayError?>(nil)

    /// From now on, every wait for durability fails with `error` once it passes the gate.
    func failWrites(with error: RelayError) {
        failure.withLock { $0 = error }
    }

    /// From now on, every wait for durability holds at ``durable``.
    func holdDurability() {
        holding.withLock { $0 = true }
    }

    func open() async throws -> StoredState { .empty }

    func append(_ records: [StorageRecord]) -> StorageTicket {
        appended.withLock { count in
            count += UInt64(records.count)
            return StorageTicket(position: count)
        }
    }

    func waitUntilDurable(_ ticket: StorageTicket) async throws {
        if holding.withLock({ $0 }) { await durable.wait() }
        if let failure = failure.withLock({ $0 }) { throw failure }
    }

    func close() async throws {}
}

@Suite("S13 S16 what waits for durability", .timeLimit(.minutes(3)))
struct EventDurabilityTests {
    @Test("S13: a subscriber sees an event only once the transition it reports is durable")
    func eventsWaitForDurability() async throws {
        let storage = GatedStorage()
        try await withManualPoint(storage: storage) { point, _ in
            let recorder = EventRecorder(point)
            let operation = CallOperation(kind: .noop)
            storage.holdDurability()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { _ = try await point.enqueue(operation) }
                // The commit is appended and waits for durability: nothing of it may be seen yet.
                await storage.durable.waitForArrivals(1)
                #expect(recorder.events.isEmpty)
                storage.durable.open()
                try await group.waitForAll()
            }
            await recorder.waitFor { $0.operationID == operation.id && $0.kind.isTerminal }
            #expect(recorder.kinds(of: operation.id).first == .enqueued(snapshot: 1))
        }
    }

    @Test("S16: an operation runs only once its commit is durable, its start recorded beside the commit")
    func runsOnceItsCommitIsDurable() async throws {
        let storage = GatedStorage()
        let ran = Mutex(0)
        try await withManualPoint(storage: storage) { point, _ in
            point.register(
                ClosureExecutor { _, _ in
                    ran.withLock { $0 += 1 }
                    return .completed(Data())
                }, for: "counted")
            storage.holdDurability()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { _ = try await point.enqueue(CallOperation(kind: "counted")).value }
                // The commit waits for durability, and so does the worker that claimed its operation at once: its
                // start follows the commit in the log, and shares its sync.
                await storage.durable.waitForArrivals(2)
                #expect(ran.withLock { $0 } == 0)
                storage.durable.open()
                try await group.waitForAll()
            }
            #expect(ran.withLock { $0 } == 1)
        }
    }
}
