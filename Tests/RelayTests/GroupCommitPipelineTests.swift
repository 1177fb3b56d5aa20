import Dispatch
import Foundation
import Relay
import Synchronization
import Testing

/// A log whose syncs and writes say what overlaps what: each sync waits until a later batch's write has begun, or a
/// second at most, and records whether one did.
private final class OverlapLog: GroupCommitWriter {
    struct Trace: Sendable {
        var steps: [String] = []
        var writes = 0
        var syncs = 0
        var syncing = false
        var maintenanceBesideASync = false
    }

    let trace = Mutex(Trace())
    private let wrote = DispatchSemaphore(value: 0)
    let maintainAfter: Int
    /// Tells the test that the first write has begun; that write then waits for `finishFirstWrite`.
    let firstWriteBegan: AsyncStream<Void>
    private let firstWriteBegins: AsyncStream<Void>.Continuation
    let finishFirstWrite = DispatchSemaphore(value: 0)

    /// How long a sync waits for a write beside it.
    let overlapWait: Double

    init(maintainAfter: Int = .max, holdingTheFirstWrite: Bool = false, overlapWait: Double = 1) {
        self.maintainAfter = maintainAfter
        self.overlapWait = overlapWait
        (firstWriteBegan, firstWriteBegins) = AsyncStream.makeStream()
        if !holdingTheFirstWrite { finishFirstWrite.signal() }
    }

    func write(_ batch: [String]) throws -> GroupCommitWrite {
        let writes = trace.withLock { trace in
            trace.writes += 1
            trace.steps.append("write \(batch.joined(separator: ","))")
            return trace.writes
        }
        if writes == 1 {
            firstWriteBegins.yield()
            finishFirstWrite.wait()
        }
        wrote.signal()
        return GroupCommitWrite(needsSync: true, needsMaintenance: writes == maintainAfter)
    }

    func sync() throws {
        // The n-th sync makes the n-th write durable, each batch here being one write.
        let synced = trace.withLock { trace in
            trace.syncing = true
            trace.syncs += 1
            return trace.syncs
        }
        // Waits for the write after the one it syncs: only a pipelined drain writes while a sync is in flight.
        let deadline = DispatchTime.now() + overlapWait
        while trace.withLock({ $0.writes }) <= synced, wrote.wait(timeout: deadline) == .success {}
        let overlapped = trace.withLock { $0.writes } > synced
        trace.withLock { trace in
            trace.syncing = false
            trace.steps.append(overlapped ? "sync beside a write" : "sync alone")
        }
    }

    func performMaintenance() throws {
        trace.withLock { trace in
            trace.maintenanceBesideASync = trace.maintenanceBesideASync || trace.syncing
            trace.steps.append("maintenance")
        }
    }
}

@Suite("S16 group commit writes beside its syncs", .timeLimit(.minutes(3)))
struct GroupCommitPipelineTests {
    @Test("S16: a batch is written while the one before it is synced, and nothing is acknowledged before its sync")
    func writeBesideSync() async throws {
        let log = OverlapLog(holdingTheFirstWrite: true)
        let commits = GroupCommit(writer: log, empty: [String]())
        let first = commits.append(transitions: 1) { $0.append("a") }
        async let firstDurable: Void = commits.waitUntilDurable(first)
        // Appended while the first batch is being written, so it is the next batch, written beside the first's sync.
        for await _ in log.firstWriteBegan { break }
        let second = commits.append(transitions: 1) { $0.append("b") }
        log.finishFirstWrite.signal()
        try await firstDurable
        #expect(log.trace.withLock { $0.steps }.contains { $0.hasPrefix("sync") }, "acknowledged before its sync")
        try await commits.waitUntilDurable(second)
        let steps = log.trace.withLock { $0.steps }
        #expect(steps.first == "write a")
        #expect(steps.contains("sync beside a write"), "\(steps)")
        #expect(steps.filter { $0.hasPrefix("sync") }.count == 2, "\(steps)")
    }

    @Test("S16: maintenance runs once its batch is synced, never beside a sync")
    func maintenanceAlone() async throws {
        let log = OverlapLog(maintainAfter: 2, overlapWait: 0)
        let commits = GroupCommit(writer: log, empty: [String]())
        for name in ["a", "b", "c"] {
            let ticket = commits.append(transitions: 1) { $0.append(name) }
            try await commits.waitUntilDurable(ticket)
        }
        let trace = log.trace.withLock { $0 }
        #expect(trace.steps.contains("maintenance"))
        #expect(!trace.maintenanceBesideASync)
        #expect(trace.steps.firstIndex(of: "maintenance")! > trace.steps.firstIndex(of: "write b")!)
    }
}
