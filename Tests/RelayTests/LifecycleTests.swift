import Foundation
import RelayTesting
import Testing

@testable import Relay

@Suite("S15 lifecycle", .timeLimit(.minutes(3)))
struct LifecycleTests {
    @Test("S15: run() runs until its task is cancelled; interrupted operations stay stored as pending")
    func runUntilCancelled() async throws {
        let clock = ManualClock()
        let point = try await DataPoint(storage: .volatile, clock: clock, configuration: testConfiguration)
        let started = Gate()
        point.registerUntilCancelled("forever", started: started)
        point.registerBasics()
        let running = try await point.enqueue(CallOperation(kind: "forever"))
        let waiting = try await point.enqueue(CallOperation(kind: .noop))
        let engine = Task { try await point.run() }
        await started.waitForArrivals(1)
        engine.cancel()
        try await engine.value
        #expect((try await running.status)?.state == .pending(.ready))
        #expect((try await running.status)?.attempts == 1)
        #expect((try await waiting.status)?.state == .pending(.ready))
        let error = await #expect(throws: RelayError.self) { try await running.value }
        #expect(error?.code == .shutdown)
    }

    @Test("S15: graceful shutdown waits for running operations until the deadline, then cancels them")
    func gracefulShutdown() async throws {
        let clock = ManualClock()
        let configuration = DataPoint.Configuration(shutdownGracePeriod: .seconds(10))
        let point = try await DataPoint(storage: .volatile, clock: clock, configuration: configuration)
        let quick = Gate()
        let stubbornStarted = Gate()
        point.register(
            ClosureExecutor { _, _ in
                await quick.wait()
                return .completed(Data("q".utf8))
            },
            for: "quick"
        )
        point.registerUntilCancelled("stubborn", started: stubbornStarted)
        point.registerBasics()
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2))
        let finishing = try await point.enqueue(CallOperation(kind: "quick"))
        let stubborn = try await point.enqueue(CallOperation(kind: "stubborn"))
        let queued = try await point.enqueue(CallOperation(kind: .noop))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            await quick.waitForArrivals(1)
            await stubbornStarted.waitForArrivals(1)
            point.beginShutdown()
            quick.open()
            #expect(try await finishing.value == Data("q".utf8))
            await clock.waitForSleepers(1)
            #expect(try await stubborn.status?.state == .running(attempt: 1))
            #expect(try await queued.status?.state == .pending(.ready))
            clock.advance(by: .seconds(10))
            try await group.waitForAll()
        }
        #expect(try await stubborn.status?.state == .pending(.ready))
        #expect(try await stubborn.status?.attempts == 1)
        #expect(try await queued.status?.attempts == 0)
    }

    @Test("S15: a stop that lands amid batches of fast operations runs none twice, and gives back what never ran")
    func stopAmidBatches() async throws {
        let runs = Log<UUID>()
        let operations = (0..<20_000).map { _ in CallOperation(kind: "counted") }
        let point = try await DataPoint(storage: .volatile)
        point.register(
            ClosureExecutor { [weak point] operation, _ in
                runs.append(operation.id)
                // The stop begins from inside an operation, so that it lands while workers hold batches.
                if runs.count == 2_000 { point?.core.beginStop(gracePeriod: .zero) }
                return .completed(Data())
            }, for: "counted")
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
        try await point.enqueue(operations)
        try await point.run()
        let counts = Dictionary(grouping: runs.all) { $0 }.mapValues(\.count)
        #expect(counts.values.allSatisfy { $0 == 1 })
        var unfinished = 0
        for operation in operations {
            let status = try #require(try await point.status(of: operation.id))
            switch status.state {
            case .finished(.completed):
                #expect(counts[operation.id] == 1)
            case .pending:
                #expect(status.attempts == counts[operation.id, default: 0])
                unfinished += 1
            default:
                Issue.record("unexpected state \(status.state)")
            }
        }
        #expect(unfinished > 0)
    }

    @Test("S15: a stop from another task lands while workers run a backlog of operations that never suspend")
    func stopFromAnotherTaskLands() async throws {
        let runs = Log<UUID>()
        let firstPart = Gate()
        let point = try await DataPoint(storage: .volatile)
        point.register(
            ClosureExecutor { operation, _ in
                runs.append(operation.id)
                if runs.count == 1_000 { firstPart.open() }
                return .completed(Data())
            }, for: "counted")
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
        try await point.enqueue((0..<10_000).map { _ in CallOperation(kind: "counted") })
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            await firstPart.wait()
            try await point.shutdown(gracePeriod: .zero)
            try await group.waitForAll()
        }
        #expect(runs.count < 10_000)
    }

    @Test("S15: DataPoint.with runs the engine for a scope and stops it at the end")
    func withRunsForAScope() async throws {
        let point = try await DataPoint.with(storage: .volatile) { point in
            point.registerBasics()
            let value = try await point.execute(CallOperation(kind: .echo, payload: Data("in".utf8)))
            #expect(value == Data("in".utf8))
            return point
        }
        let error = await #expect(throws: RelayError.self) { try await point.enqueue(CallOperation(kind: .noop)) }
        #expect(error?.code == .shutdown)
    }

    @Test("S15: DataPoint.with waits, when asked, until every operation that can run has run; the rest stay pending")
    func withWaitsForPending() async throws {
        let gate = Gate()
        let ran = Log<UUID>()
        let later: CallSequence.Name = "later"
        let (point, waiting) = try await DataPoint.with(
            storage: .volatile, configuration: testConfiguration, waitForPending: true
        ) { point in
            point.register(
                ClosureExecutor { operation, _ in
                    await gate.wait()
                    ran.append(operation.id)
                    return .completed(Data())
                }, for: .gated)
            try await point.upsertCallSequence(CallSequence(name: later))
            _ = try await point.sequence(named: later)?.suspend()
            let waiting = CallOperation(kind: .gated, sequenceName: later)
            try await point.enqueue(waiting)
            try await point.enqueue((0..<3).map { _ in CallOperation(kind: .gated) })
            gate.open()
            return (point, waiting)
        }
        #expect(ran.all.count == 3)
        #expect(try await point.status(of: waiting.id)?.state == .pending(.suspended))
    }

    @Test("S15: once stopped, a DataPoint lets go of its executors: one that holds the DataPoint keeps it no longer")
    func stoppedPointReleasesExecutors() async throws {
        weak var released: DataPoint?
        try await DataPoint.with(storage: .volatile, configuration: testConfiguration) { point in
            point.register(
                ClosureExecutor { _, _ in
                    _ = try await point.suspend()
                    _ = try await point.resume()
                    return .completed(Data())
                }, for: "holds")
            _ = try await point.execute(CallOperation(kind: "holds"))
            released = point
        }
        #expect(released == nil)
    }

    @Test("S15: a scope that throws still shuts the DataPoint down")
    func throwingScopeShutsDown() async throws {
        struct Expected: Error {}
        let holder = Log<DataPoint>()
        await #expect(throws: Expected.self) {
            try await DataPoint.with(storage: .volatile) { point in
                holder.append(point)
                throw Expected()
            }
        }
        let point = try #require(holder.all.first)
        await #expect(throws: RelayError.self) { try await point.enqueue(CallOperation(kind: .noop)) }
    }

    @Test("S15: run() while running is a typed error")
    func runTwice() async throws {
        try await withManualPoint { point, _ in
            let error = await #expect(throws: RelayError.self) { try await point.run() }
            #expect(error?.code == .alreadyRunning)
        }
    }

    @Test("S15: operations enqueued before run() start once it runs")
    func enqueueBeforeRun() async throws {
        let point = try await DataPoint(storage: .volatile)
        point.registerBasics()
        let handle = try await point.enqueue(CallOperation(kind: .echo, payload: Data("early".utf8)))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            #expect(try await handle.value == Data("early".utf8))
            try await point.shutdown()
            try await group.waitForAll()
        }
    }

    @Test("S15: a DataPoint dropped without a shutdown frees its sequences and operations and releases its store")
    func droppedDataPointReleasesEverything() async throws {
        try await withTemporaryFolder { folder in
            weak var droppedSequence: CallSequence?
            let operation = CallOperation(kind: .echo, sequenceName: "reports")
            do {
                let point = try await DataPoint(storage: .file(at: folder.url))
                point.registerBasics()
                let sequence = try CallSequence(name: "reports", bunchSize: 2)
                droppedSequence = sequence
                try await point.upsertCallSequence(sequence)
                try await point.enqueue(operation)
            }
            #expect(droppedSequence == nil, "the sequence outlived its DataPoint")
            // The folder's lock goes with the store, so the same process can open the folder again.
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            let state = try #require(try await reopened.status(of: operation.id)).state
            // The sequence was stored with it (S3): only the executor, given at open or not at all, is missing.
            #expect(state == .pending(.executorNotRegistered("echo")))
            #expect(await reopened.sequence(named: "reports")?.bunchSize == 2)
            try await reopened.shutdown()
        }
    }
}

@Suite("S32 readiness", .timeLimit(.minutes(3)))
struct ReadinessTests {
    @Test("S32: ready() returns once run() has started the engine, and throws once the DataPoint stops first")
    func readyWhenRunning() async throws {
        let point = try await DataPoint(storage: .volatile, configuration: testConfiguration)
        point.registerBasics()
        let waiter = Task { try await point.ready() }
        let engine = Task { try await point.run() }
        try await waiter.value
        _ = try await point.enqueue(CallOperation(kind: .noop)).value
        try await point.ready()
        try await point.shutdown()
        try await engine.value
        let error = await #expect(throws: RelayError.self) { try await point.ready() }
        #expect(error?.code == .shutdown)

        let never = try await DataPoint(storage: .volatile, configuration: testConfiguration)
        let waiting = Task { try await never.ready() }
        try await never.shutdown()
        let stopped = await #expect(throws: RelayError.self) { try await waiting.value }
        #expect(stopped?.code == .shutdown)
        let cancelled = try await DataPoint(storage: .volatile, configuration: testConfiguration)
        let abandoned = Task { try await cancelled.ready() }
        abandoned.cancel()
        await #expect(throws: CancellationError.self) { try await abandoned.value }
    }
}
