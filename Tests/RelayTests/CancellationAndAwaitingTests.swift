import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S11 cancellation and S12 awaiting", .timeLimit(.minutes(3)))
struct CancellationAndAwaitingTests {
    @Test("S11: cancelling a pending operation makes it cancelled and cascades to dependents")
    func cancelPending() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let first = CallOperation(kind: .noop)
            let second = CallOperation(kind: .noop, dependencies: [first.id])
            let handles = try await point.enqueue([first, second])
            #expect(try await point.cancel(first.id))
            #expect(try await handles[0].outcome == .cancelled(.requested))
            #expect(try await handles[1].outcome == .cancelled(.dependencyCancelled(first.id)))
            #expect(try await point.cancel(first.id) == false)
        }
    }

    @Test("S11: cancelling a running operation cancels its task cooperatively")
    func cancelRunning() async throws {
        try await withManualPoint { point, _ in
            let started = Gate()
            point.registerUntilCancelled("forever", started: started)
            let handle = try await point.enqueue(CallOperation(kind: "forever"))
            let next = try await point.enqueue(CallOperation(kind: .echo, payload: Data("next".utf8)))
            await started.waitForArrivals(1)
            #expect(try await point.cancel(handle.id))
            #expect(try await handle.outcome == .cancelled(.requested))
            // The worker that ran it is replaced, and the sequence carries on.
            #expect(try await next.value == Data("next".utf8))
        }
    }

    @Test(
        "S11: cancels that race fast operations, which workers claim in batches, never run a cancelled one or any twice"
    )
    func cancelsRacingBatches() async throws {
        let runs = Log<UUID>()
        let operations = (0..<20_000).map { _ in CallOperation(kind: "counted") }
        let outcomes = try await withManualPoint { point, _ in
            point.register(
                ClosureExecutor { operation, _ in
                    runs.append(operation.id)
                    return .completed(Data())
                }, for: "counted")
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            let handles = try await point.enqueue(operations)
            for (index, operation) in operations.enumerated() where index % 7 == 3 {
                _ = try await point.cancel(operation.id)
            }
            var outcomes: [CallResult] = []
            for handle in handles { outcomes.append(try await handle.outcome) }
            return outcomes
        }
        let counts = Dictionary(grouping: runs.all) { $0 }.mapValues(\.count)
        #expect(counts.values.allSatisfy { $0 == 1 })
        for (operation, outcome) in zip(operations, outcomes) {
            switch outcome {
            case .completed: #expect(counts[operation.id] == 1)
            case .cancelled: #expect(counts[operation.id] == nil)
            default: Issue.record("unexpected outcome \(outcome)")
            }
        }
    }

    @Test("S11: an executor that completes despite cancellation completes")
    func completesDespiteCancellation() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate, result: Data("done".utf8))
            let handle = try await point.enqueue(CallOperation(kind: .gated))
            await gate.waitForArrivals(1)
            #expect(try await point.cancel(handle.id))
            gate.open()
            #expect(try await handle.outcome == .completed(Data("done".utf8)))
        }
    }

    @Test("S11: cancelling a task that awaits a handle never cancels the operation")
    func cancellingAWaiter() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate, result: Data("kept".utf8))
            let handle = try await point.enqueue(CallOperation(kind: .gated))
            let waiter = Task { try await handle.value }
            await gate.waitForArrivals(1)
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            #expect((try await handle.status)?.state == .running(attempt: 1))
            gate.open()
            #expect(try await handle.value == Data("kept".utf8))
        }
    }

    @Test("S12: handles enqueued in one call each get their own outcome; cancelling one wait leaves the others")
    func handlesOfOneCommit() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            // More than one block of shared outcomes.
            let operations = (0..<150).map { CallOperation(kind: .echo, payload: Data("\($0)".utf8)) }
            let handles = try await point.enqueue(operations)
            let cancelled = Task { try await handles[1].value }
            cancelled.cancel()
            try await withThrowingTaskGroup(of: (Int, Data).self) { group in
                for (position, handle) in handles.enumerated() {
                    group.addTask { (position, try await handle.value) }
                }
                try await point.resume()
                var seen = 0
                for try await (position, value) in group {
                    #expect(value == Data("\(position)".utf8))
                    seen += 1
                }
                #expect(seen == handles.count)
            }
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            #expect(try await handles[1].value == Data("1".utf8))
        }
    }

    @Test("S12: execute is enqueue followed by awaiting the value")
    func executeAwaitsValue() async throws {
        try await withManualPoint { point, _ in
            let operation = CallOperation(kind: .echo, payload: Data("v".utf8))
            let value = try await point.execute(operation)
            #expect(value == Data("v".utf8))
            #expect(try await point.status(of: operation.id)?.state == .finished(.completed(Data("v".utf8))))
        }
    }

    @Test("S12: a newcomer's first five lines work")
    func newcomerFirstLines() async throws {
        let reply = try await DataPoint.with(storage: .volatile) { point in
            point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
            return try await point.execute(CallOperation(kind: "echo", payload: Data("hello".utf8)))
        }
        #expect(String(decoding: reply, as: UTF8.self) == "hello")
    }

    @Test("S12: execute issued while run() is still starting waits for it and returns the result, in every DataPoint")
    func executeBeforeRunStarts() async throws {
        for round in 0..<20 {
            let point = try await DataPoint(storage: .volatile, configuration: testConfiguration)
            point.registerBasics()
            let payload = Data("round \(round)".utf8)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                #expect(try await point.execute(CallOperation(kind: .echo, payload: payload)) == payload)
                try await point.shutdown()
                try await group.waitForAll()
            }
        }
    }

    @Test("S12: execute on a DataPoint that never runs waits; cancelling its task ends the wait with notRunning")
    func executeWithoutRunIsCancellable() async throws {
        let point = try await DataPoint(storage: .volatile, configuration: testConfiguration)
        point.registerBasics()
        let error = await withTaskGroup(of: RelayError?.self) { group in
            group.addTask {
                do {
                    _ = try await point.execute(CallOperation(kind: .noop))
                    return nil
                } catch {
                    return error as? RelayError
                }
            }
            group.cancelAll()
            return await group.next() ?? nil
        }
        #expect(error?.code == .notRunning)
        #expect(error?.message.contains("DataPoint.with") == true)
        try await point.shutdown()
    }

    @Test("S12: execute waiting for a DataPoint to run ends with a shutdown error when it shuts down instead")
    func executeWaitingEndsAtShutdown() async throws {
        let point = try await DataPoint(storage: .volatile, configuration: testConfiguration)
        point.registerBasics()
        let arrived = Gate()
        arrived.open()
        let error = try await withThrowingTaskGroup(of: RelayError?.self) { group in
            group.addTask {
                await arrived.wait()
                do {
                    _ = try await point.execute(CallOperation(kind: .noop))
                    return nil
                } catch {
                    return error as? RelayError
                }
            }
            await arrived.waitForArrivals(1)
            try await point.shutdown()
            return try await group.next() ?? nil
        }
        #expect(error?.code == .shutdown)
    }

    @Test("S12: every awaiting handle is resumed exactly once, also at shutdown with a typed error")
    func shutdownResumesWaiters() async throws {
        let clock = ManualClock()
        let point = try await DataPoint(storage: .volatile, clock: clock, configuration: testConfiguration)
        point.registerBasics()
        try await point.suspend()
        let handles = try await point.enqueue((0..<50).map { _ in CallOperation(kind: .noop) })
        let outcomes = Log<String>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            for handle in handles {
                for _ in 0..<2 {
                    group.addTask {
                        do {
                            _ = try await handle.value
                            outcomes.append("value")
                        } catch let error as RelayError {
                            outcomes.append(error.code.description)
                        }
                    }
                }
            }
            try await point.shutdown()
            try await group.waitForAll()
        }
        #expect(outcomes.all.count == 100)
        #expect(outcomes.all.allSatisfy { $0 == "shutdown" })
        // Pending operations stay stored; awaiting after shutdown also resumes at once.
        #expect(try await point.status(of: handles[0].id)?.state == .pending(.suspended))
        let late = await #expect(throws: RelayError.self) { try await handles[0].value }
        #expect(late?.code == .shutdown)
    }

    @Test("S12/S17: enqueue or execute after shutdown is a typed error")
    func afterShutdown() async throws {
        let point = try await DataPoint.with(storage: .volatile, configuration: testConfiguration) { point in
            point.registerBasics()
            return point
        }
        let enqueueError = await #expect(throws: RelayError.self) {
            try await point.enqueue(CallOperation(kind: .noop))
        }
        #expect(enqueueError?.code == .shutdown)
        let executeError = await #expect(throws: RelayError.self) {
            try await point.execute(CallOperation(kind: .noop))
        }
        #expect(executeError?.code == .shutdown)
        // Like a service whose shutdown raced ahead of it, run() returns at once.
        try await point.run()
    }

    @Test("S16: a DataPoint that goes quiet forgets each finished operation once its own window has passed")
    func quietDataPointForgets() async throws {
        let configuration = DataPoint.Configuration(retention: .seconds(10), shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, clock in
            let older = try await point.enqueue(CallOperation(kind: .echo, payload: Data("older".utf8)))
            _ = try await older.value
            // The timer loop sleeps until the end of the older operation's window.
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(5))
            let younger = try await point.enqueue(CallOperation(kind: .noop))
            _ = try await younger.value

            // No commit follows: the timer loop forgets the older operation, then sleeps until the younger one's
            // window ends.
            clock.advance(by: .seconds(6))
            await clock.waitForSleepers(1)
            #expect(try await older.status == nil)
            #expect(try await younger.status?.state == .finished(.completed(Data())))
            let reattach = await #expect(throws: RelayError.self) { try await point.handle(for: older.id) }
            #expect(reattach?.code == .unknownOperation)
            #expect(try await older.value == Data("older".utf8))
        }
    }

    @Test("S12: a live handle keeps its outcome past the retention window; re-attaching then is a typed error")
    func retentionAndHandles() async throws {
        let configuration = DataPoint.Configuration(retention: .seconds(10), shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, clock in
            let error = await #expect(throws: RelayError.self) { try await point.handle(for: UUID()) }
            #expect(error?.code == .unknownOperation)
            let handle = try await point.enqueue(CallOperation(kind: .echo, payload: Data("kept".utf8)))
            _ = try await handle.value
            #expect(try await point.handle(for: handle.id).id == handle.id)
            clock.advance(by: .seconds(11))
            // A commit forgets the finished operations whose window has passed, if the timer loop has not yet.
            try await point.enqueue(CallOperation(kind: .noop))
            #expect((try await handle.status) == nil)
            #expect(try await handle.value == Data("kept".utf8))
            let reattach = await #expect(throws: RelayError.self) { try await point.handle(for: handle.id) }
            #expect(reattach?.code == .unknownOperation)
        }
    }
}
