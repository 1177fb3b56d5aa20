import Foundation
import Logging
import Relay
import RelayServer
import RelayTesting
import ServiceLifecycle
import Testing

/// A service that follows Relay's events, as a server's route streaming them would, until its own graceful shutdown.
private struct EventFollower: Service {
    let point: DataPoint
    let following: Gate
    let ended: Gate

    func run() async throws {
        let events = point.events().cancelOnGracefulShutdown()
        following.open()
        for await _ in events {}
        ended.open()
        // A server goes on when one of its streams ends, until its own shutdown.
        try? await gracefulShutdown()
    }
}

private let quiet = Logger(label: "relay-server-tests") { _ in SwiftLogNoOpLogHandler() }

private func group(_ services: [any Service]) -> ServiceGroup {
    ServiceGroup(configuration: ServiceGroupConfiguration(services: services, logger: quiet))
}

@Suite("S32 RelayService under ServiceLifecycle", .timeLimit(.minutes(1)))
struct RelayServiceTests {
    @Test("S32: graceful shutdown lets running operations finish, starts nothing more, and ends the group")
    func drainsRunningOperations() async throws {
        let point = try await DataPoint(storage: .volatile, configuration: .testing)
        let gate = Gate()
        point.register(
            ClosureExecutor { _, _ in
                await gate.wait()
                return .completed(Data("done".utf8))
            }, for: "gated")
        let services = group([RelayService(point, dataBunchSize: 2)])
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            try await point.ready()
            // The data sequence runs two at once, as the service configured it.
            let first = try await point.enqueue(CallOperation(kind: "gated"))
            let second = try await point.enqueue(CallOperation(kind: "gated"))
            await gate.waitForArrivals(2)
            _ = try await point.suspend()
            let queued = try await point.enqueue(CallOperation(kind: "gated"))
            await services.triggerGracefulShutdown()
            gate.open()
            #expect(try await first.value == Data("done".utf8))
            #expect(try await second.value == Data("done".utf8))
            try await tasks.waitForAll()
            #expect(try await queued.status?.state.isTerminal == false, "it stays stored, pending")
        }
        let error = await #expect(throws: RelayError.self) { try await point.ready() }
        #expect(error?.code == .shutdown)
    }

    @Test("S32: past the drain deadline, on the DataPoint's clock, running operations are cancelled")
    func cancelsPastTheDeadline() async throws {
        let clock = ManualClock()
        let point = try await DataPoint(storage: .volatile, clock: clock, configuration: .testing)
        let started = Gate()
        point.register(
            ClosureExecutor { _, _ in
                started.open()
                try await Task.sleep(for: .seconds(3600))
                return .completed(Data())
            }, for: "stubborn")
        let services = group([RelayService(point, drainDeadline: .seconds(5))])
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            try await point.ready()
            let stubborn = try await point.enqueue(CallOperation(kind: "stubborn"))
            await started.wait()
            await services.triggerGracefulShutdown()
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(5))
            try await tasks.waitForAll()
            #expect(try await stubborn.status?.state.isTerminal == false, "interrupted, it stays stored to run again")
        }
    }

    @Test("S32: a stream of events that another service follows ends at its own shutdown, whatever the order")
    func streamsEndWhateverTheOrder() async throws {
        for relayFirst in [true, false] {
            let point = try await DataPoint(storage: .volatile, configuration: .testing)
            let following = Gate()
            let ended = Gate()
            let relay = RelayService(point)
            let follower = EventFollower(point: point, following: following, ended: ended)
            // A group shuts its services down in reverse order: the follower first when Relay is listed first.
            let services = group(relayFirst ? [relay, follower] : [follower, relay])
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await services.run() }
                try await point.ready()
                await following.wait()
                await services.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            #expect(ended.isOpen)
        }
    }
}
