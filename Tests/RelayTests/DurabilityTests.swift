import Foundation
import Relay
import RelayTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("S16 durability, file store", .timeLimit(.minutes(2)))
struct DurabilityTests {
    @Test("S16: acknowledged operations survive a restart, and commit numbers keep increasing")
    func reopenKeepsOperations() async throws {
        try await withTemporaryFolder { folder in
            let first = CallOperation(kind: .echo, payload: Data("one".utf8))
            let waiting = CallOperation(kind: .echo, dependencies: [first.id])
            let point = try await DataPoint(storage: .file(at: folder.url))
            point.registerBasics()
            try await point.suspend()
            try await point.enqueue([first, waiting])
            let snapshot = try #require(try await point.status(of: first.id)).snapshot
            try await point.shutdown()

            let reopened = try await DataPoint(storage: .file(at: folder.url))
            reopened.registerBasics()
            #expect(try await reopened.status(of: first.id)?.snapshot == snapshot)
            #expect(try await reopened.status(of: waiting.id) != nil)
            let later = try await reopened.enqueue(CallOperation(kind: .noop))
            #expect(try #require(try await reopened.status(of: later.id)).snapshot > snapshot)
            _ = try await reopened.resume()
            try await run(reopened, until: [first.id, waiting.id, later.id])
            #expect(try await reopened.status(of: waiting.id)?.state == .finished(.completed(Data())))
            try await reopened.shutdown()
        }
    }

    @Test("S16: an operation running at a crash runs again with the interrupted attempt counted and the same key")
    func crashedAttemptRunsAgain() async throws {
        try await withTemporaryFolder { folder in
            let arrived = Gate()
            let keys = Log<String>()
            let operation = CallOperation(kind: "slow", idempotencyKey: "order-42")
            let reopened = try await DataPoint.crashAndReopen(at: folder.url) { point in
                point.register(
                    ClosureExecutor { operation, _ in
                        keys.append(operation.idempotencyKey)
                        // The first attempt is still running when the process crashes.
                        if keys.all.count == 1 {
                            await arrived.wait()
                            try await untilCancelled()
                        }
                        return .completed(Data("done".utf8))
                    },
                    for: "slow"
                )
            } _: { point in
                try await point.enqueue(operation)
                await arrived.waitForArrivals(1)
                arrived.open()
            }
            #expect(reopened.recoveryReport?.interruptedOperations == 1)
            #expect(try await reopened.status(of: operation.id)?.attempts == 1)
            try await run(reopened, until: [operation.id])
            let status = try #require(try await reopened.status(of: operation.id))
            #expect(status.state == .finished(.completed(Data("done".utf8))))
            #expect(status.attempts == 2)
            #expect(keys.all == ["order-42", "order-42"])
            try await reopened.shutdown()
        }
    }

    @Test("S16: holds, suspension counts and retry schedules survive a restart")
    func schedulesSurvive() async throws {
        try await withTemporaryFolder { folder in
            let clock = ManualClock()
            let held = CallOperation(kind: .noop, sequenceName: .downloads)
            // Stored dates are wall dates: a retry an hour ahead is still ahead however slowly the reopen comes.
            let retried = CallOperation(
                kind: "flaky",
                retryPolicy: RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(3600), jitter: .none)
            )
            let holdDates = Log<Date>()
            let reopened = try await DataPoint.crashAndReopen(at: folder.url, clock: clock) { point in
                point.registerBasics()
                point.register(ClosureExecutor { _, _ in throw CancellationError() }, for: "flaky")
            } _: { point in
                let events = point.events()
                _ = try await point.sequence(named: .downloads)?.suspend()
                try await point.enqueue([held, retried])
                let until = point.now.addingTimeInterval(60)
                holdDates.append(until)
                try await point.hold(held.id, until: until)
                for await event in events {
                    if case .retryScheduled = event.kind.value { break }
                }
            }
            let holdUntil = try #require(holdDates.all.first)
            #expect(try await reopened.status(of: held.id)?.state == .pending(.held(until: holdUntil)))
            #expect(try await reopened.status(of: retried.id)?.attempts == 1)
            guard case .pending(let waiting) = try await reopened.status(of: retried.id)?.state,
                case .retry(let at) = waiting.value
            else {
                Issue.record(
                    "the retry schedule was lost: \(String(describing: try await reopened.status(of: retried.id)))")
                return
            }
            #expect(at > reopened.now)
            #expect(await reopened.sequence(named: .downloads)?.suspensionCount == 1)
            try await reopened.shutdown()
        }
    }

    @Test("S16: a finished outcome re-attaches through handle(for:) after a restart")
    func outcomesReattach() async throws {
        try await withTemporaryFolder { folder in
            let operation = CallOperation(kind: .echo, payload: Data("kept".utf8))
            try await DataPoint.with(storage: .file(at: folder.url)) { point in
                point.registerBasics()
                let value = try await point.execute(operation)
                #expect(value == Data("kept".utf8))
            }
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            let handle = try await reopened.handle(for: operation.id)
            #expect(try await handle.value == Data("kept".utf8))
            try await reopened.shutdown()
        }
    }

    @Test("S16: the DataPoint's retention is the store's: after a restart, what finished within it re-attaches")
    func oneRetention() async throws {
        try await withTemporaryFolder { folder in
            let operation = CallOperation(kind: .echo, payload: Data("kept".utf8))
            let hour = DataPoint.Configuration(retention: .seconds(3600), shutdownGracePeriod: .zero)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: hour) { point in
                point.registerBasics()
                _ = try await point.execute(operation)
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: hour) { point in
                let value = try await point.handle(for: operation.id).value
                #expect(value == Data("kept".utf8))
            }
            let none = DataPoint.Configuration(retention: .zero, shutdownGracePeriod: .zero)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: none) { point in
                let error = await #expect(throws: RelayError.self) { try await point.handle(for: operation.id) }
                #expect(error?.code == .unknownOperation)
            }
        }
    }

    @Test("S16: transitions that arrive during one sync share the next (group commit)")
    func groupCommit() async throws {
        try await withTemporaryFolder { folder in
            let storage = FileStorage(at: folder.url)
            try await DataPoint.with(storage: storage) { point in
                point.registerBasics()
                try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 32))
                let handles = try await point.enqueue((0..<2_000).map { _ in CallOperation(kind: .noop) })
                for handle in handles { _ = try await handle.outcome }
            }
            // 2,000 commits' worth of transitions, 4,000 starts and ends, in far fewer syncs.
            #expect(storage.syncCount > 0)
            #expect(storage.syncCount < 2_000)
        }
    }

    @Test(
        "S16: every fsync policy acknowledges only what it has written, and what it acknowledged survives a crash",
        arguments: [FileStorage.FsyncPolicy.always, .interval(.seconds(3600)), .never]
    )
    func fsyncPolicies(policy: FileStorage.FsyncPolicy) async throws {
        try await withTemporaryFolder { folder in
            let storage = FileStorage(at: folder.url, options: FileStorage.Options(fsync: policy))
            let operations = (0..<200).map { _ in CallOperation(kind: .noop) }
            let point = try await DataPoint(storage: storage)
            point.registerBasics()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                for handle in try await point.enqueue(operations) { _ = try await handle.outcome }
                await point.simulateCrash()
                try await group.waitForAll()
            }
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            for operation in operations {
                #expect(try await reopened.status(of: operation.id)?.state == .finished(.completed(Data())))
            }
            let expected: ClosedRange<Int> =
                switch policy.value {
                case .always: 1...Int.max
                case .interval: 1...1
                case .never: 0...0
                }
            #expect(expected.contains(storage.syncCount), "\(storage.syncCount) syncs")
            try await reopened.shutdown()
        }
    }

    @Test("S16: under the interval policy a write syncs once the last sync is an interval old on the injected clock")
    func intervalPolicyFollowsTheClock() async throws {
        try await withTemporaryFolder { folder in
            let clock = ManualClock()
            let storage = FileStorage(
                at: folder.url, options: FileStorage.Options(fsync: .interval(.seconds(10))), clock: clock)
            let point = try await DataPoint(storage: storage, clock: clock)
            point.registerBasics()
            try await point.suspend()
            let synced = storage.syncCount
            var operations: [CallOperation] = []
            func enqueue(after elapsed: Duration) async throws -> Int {
                clock.advance(by: elapsed)
                let operation = CallOperation(kind: .noop)
                operations.append(operation)
                try await point.enqueue(operation)
                return storage.syncCount - synced
            }
            #expect(try await enqueue(after: .zero) == 0)
            #expect(try await enqueue(after: .seconds(9)) == 0)
            #expect(try await enqueue(after: .seconds(1)) == 1)
            #expect(try await enqueue(after: .seconds(5)) == 1)
            try await point.shutdown()

            let reopened = try await DataPoint(storage: .file(at: folder.url))
            for operation in operations { #expect(try await reopened.status(of: operation.id) != nil) }
            try await reopened.shutdown()
        }
    }

    @Test("S16: the folder is created 0700 and its files 0600")
    func permissions() async throws {
        try await withTemporaryFolder { folder in
            try await DataPoint.with(storage: .file(at: folder.url)) { point in
                point.registerBasics()
                _ = try await point.execute(CallOperation(kind: .noop))
            }
            #expect(try mode(of: folder.url) == 0o700)
            for name in ["journal", "snapshot", "lock"] {
                #expect(try mode(of: folder.url.appendingPathComponent(name)) == 0o600, "\(name)")
            }
        }
    }

    private func mode(of url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }
}

/// Runs `point` until every one of `ids` has finished, then stops it.
func run(_ point: DataPoint, until ids: [UUID]) async throws {
    var handles: [CallHandle] = []
    for id in ids { handles.append(try await point.handle(for: id)) }
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await point.run() }
        for handle in handles { _ = try? await handle.outcome }
        try await point.shutdown()
        try await group.waitForAll()
    }
}
