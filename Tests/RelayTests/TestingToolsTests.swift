import Foundation
import Relay
import RelayTesting
import Testing

/// RelayTesting's waits end when the waiting task is cancelled, so that a stuck test ends at its time limit.
@Suite("RelayTesting waits", .timeLimit(.minutes(3)))
struct TestingToolsTests {
    @Test("a task waiting at a closed gate ends when it is cancelled, parked or not yet")
    func gateWaitIsCancellable() async {
        let gate = Gate()
        let ended = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await gate.wait()
                return true
            }
            // Parked: the wait has arrived at the gate before the cancellation.
            await gate.waitForArrivals(1)
            group.cancelAll()
            return await group.next() ?? false
        }
        #expect(ended)
        let early = await withTaskGroup(of: Bool.self) { group in
            group.cancelAll()
            group.addTask {
                await gate.wait()
                return true
            }
            return await group.next() ?? false
        }
        #expect(early)
        #expect(gate.arrivals == 2)
    }

    @Test("waiting for arrivals that never come ends when the task is cancelled")
    func arrivalsWaitIsCancellable() async {
        let gate = Gate()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await gate.waitForArrivals(5) }
            group.cancelAll()
            await group.waitForAll()
        }
        #expect(gate.arrivals == 0)
    }

    @Test("waiting for events that never come ends when the task is cancelled, with what matched so far")
    func recorderWaitIsCancellable() async throws {
        try await DataPoint.with(storage: .volatile, configuration: DataPoint.Configuration(shutdownGracePeriod: .zero))
        {
            point in
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "noop")
            let recorder = EventRecorder(point)
            let operation = CallOperation(kind: "noop")
            _ = try await point.execute(operation)
            await recorder.waitForTerminal(of: operation.id)
            let matched = await withTaskGroup(of: [CallEvent].self) { group in
                group.addTask { await recorder.waitFor(2) { $0.operationID == operation.id && $0.kind.isTerminal } }
                group.cancelAll()
                return await group.next() ?? []
            }
            #expect(matched.count == 1)
        }
    }

    @Test("waiting for requests that never come ends when the task is cancelled")
    func requestWaitIsCancellable() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await server.waitForRequests(1) }
            group.cancelAll()
            await group.waitForAll()
        }
        #expect(server.requests.isEmpty)
    }

    @Test("the test preset ends its scope while an operation still runs: no grace period on a clock nobody moves")
    func presetEndsWhileOperationsRun() async throws {
        let gate = Gate()
        let handle = try await DataPoint.testing { point, clock in
            point.register(
                ClosureExecutor { _, _ in
                    await gate.wait()
                    try Task.checkCancellation()
                    return .completed(Data())
                }, for: "gated")
            let handle = try await point.enqueue(CallOperation(kind: "gated"))
            await gate.waitForArrivals(1)
            #expect(clock.now == .zero)
            return handle
        }
        // Shutdown cancelled the running attempt at once; it stays pending, and its waiters hear of the shutdown.
        let error = await #expect(throws: RelayError.self) { try await handle.value }
        #expect(error?.code == .shutdown)
        #expect(gate.arrivals == 1)
    }
}
