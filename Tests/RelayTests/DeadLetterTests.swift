import Foundation
import RelayTesting
import Testing

@testable import Relay

/// S16's dead-letter set: failed and cancelled operations kept past the retention window, under bounds of their own,
/// until purged.
@Suite("S16 dead letters and purging", .timeLimit(.minutes(3)))
struct DeadLetterTests {
    private static let refused: CallKind = "refused"

    private func registerRefused(on point: DataPoint) {
        point.register(ClosureExecutor { _, _ in .failed(reason: "card declined") }, for: Self.refused)
    }

    private func failing(_ index: Int) -> CallOperation {
        CallOperation(kind: Self.refused, payload: Data([UInt8(index)]), retryPolicy: .never)
    }

    private func ids(_ query: OperationQuery, of point: DataPoint) throws -> [UUID] {
        try point.operations(query).statuses.map(\.id)
    }

    @Test("S16: failed and cancelled operations outlive the retention window with their last error, until their own")
    func deadLettersOutliveRetention() async throws {
        let configuration = DataPoint.Configuration(
            retention: .seconds(10), deadLetterRetention: .seconds(100), shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, clock in
            registerRefused(on: point)
            let completed = try await point.enqueue(CallOperation(kind: .echo))
            _ = try await completed.value
            let failed = try await point.enqueue(failing(0))
            _ = try? await failed.value
            try await point.suspend()
            let cancelled = try await point.enqueue(CallOperation(kind: .echo))
            #expect(try await point.cancel(cancelled.id))
            try await point.resume()

            clock.advance(by: .seconds(11))
            try await point.enqueue(CallOperation(kind: .noop))
            #expect(try await point.status(of: completed.id) == nil)
            let deadLetters = try point.operations(.deadLetters()).statuses
            #expect(deadLetters.map(\.id) == [failed.id, cancelled.id])
            guard case .finished(.failed(let failure)) = deadLetters.first?.state else {
                Issue.record("the failed operation lost its failure: \(String(describing: deadLetters.first))")
                return
            }
            #expect(failure.reason == "card declined")
            #expect(failure.attempts == 1)
            #expect(deadLetters.last?.state == .finished(.cancelled(.requested)))

            clock.advance(by: .seconds(90))
            try await point.enqueue(CallOperation(kind: .noop))
            #expect(try ids(.deadLetters(), of: point).isEmpty)
            #expect(try await point.status(of: failed.id) == nil)
        }
    }

    @Test("S16: past maximumDeadLetters the oldest dead letters go, and completed ones count apart from them")
    func deadLetterBound() async throws {
        let configuration = DataPoint.Configuration(
            maximumRetained: 1, maximumDeadLetters: 2, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, _ in
            registerRefused(on: point)
            let operations = (0..<3).map(failing)
            for operation in operations { _ = try? await point.execute(operation) }
            for _ in 0..<3 { _ = try await point.execute(CallOperation(kind: .noop)) }
            try await point.enqueue(CallOperation(kind: .noop))
            #expect(try ids(.deadLetters(), of: point) == operations.suffix(2).map(\.id))
            #expect(point.operationCounts()[.completed] == 1)
        }
    }

    @Test("S16: dead letters outlive the retention window across a restart, and a purge removes them for good")
    func deadLettersSurviveRestartUntilPurged() async throws {
        try await withTemporaryFolder { folder in
            let configuration = DataPoint.Configuration(retention: .zero, shutdownGracePeriod: .zero)
            let failed = failing(1)
            let completed = CallOperation(kind: .echo)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: configuration) { point in
                point.registerBasics()
                registerRefused(on: point)
                _ = try await point.execute(completed)
                _ = try? await point.execute(failed)
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: configuration) { point in
                #expect(try await point.status(of: completed.id) == nil)
                #expect(try ids(.deadLetters(), of: point) == [failed.id])
                let handle = try await point.handle(for: failed.id)
                #expect(try await point.purge([failed.id, UUID()]) == 1)
                #expect(try ids(.deadLetters(), of: point).isEmpty)
                #expect(try await point.status(of: failed.id) == nil)
                // A live handle keeps its outcome.
                guard case .failed = try await handle.outcome else {
                    Issue.record("the purged operation's handle lost its outcome")
                    return
                }
                #expect(try await point.purge([failed.id]) == 0)
            }
            #expect(try FileStorage.read(at: folder.url).operations.isEmpty)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: configuration) { point in
                let listed = try ids(.deadLetters(), of: point)
                #expect(listed.isEmpty)
                #expect(try await point.status(of: failed.id) == nil)
            }
        }
    }

    @Test("S16: purging an unfinished operation is a typed error and purges nothing; a query purges terminal ones only")
    func purgeRules() async throws {
        try await withManualPoint { point, _ in
            registerRefused(on: point)
            let failed = try await point.enqueue(failing(2))
            _ = try? await failed.value
            let completed = try await point.enqueue(CallOperation(kind: .echo, sequenceName: .uploads))
            _ = try await completed.value
            try await point.suspend()
            let pending = try await point.enqueue(CallOperation(kind: .echo))

            let error = await #expect(throws: RelayError.self) { try await point.purge([failed.id, pending.id]) }
            #expect(error?.code == .operationUnfinished)
            #expect(error?.operationIDs == [pending.id])
            #expect(try ids(.deadLetters(), of: point) == [failed.id])

            #expect(try await point.purge(matching: OperationQuery(states: [.pending, .failed])) == 1)
            #expect(try await point.purge(matching: OperationQuery(sequence: .data)) == 0)
            #expect(point.operationCounts() == [.completed: 1, .pending: 1])
            #expect(try await point.purge(matching: OperationQuery()) == 1)
            #expect(point.operationCounts() == [.pending: 1])
            try await point.resume()
            _ = try await pending.value
        }
    }

    @Test("S16: a cancelled operation purged while its dependency runs is forgotten when the dependency ends")
    func purgeWhileDependencyRuns() async throws {
        try await withManualPoint { point, _ in
            let gate = Gate()
            point.registerGated(gate)
            let dependency = CallOperation(kind: .gated)
            let dependent = CallOperation(kind: .echo, dependencies: [dependency.id])
            let handles = try await point.enqueue([dependency, dependent])
            await gate.waitForArrivals(1)
            #expect(try await point.cancel(dependent.id))
            #expect(try await point.purge([dependent.id]) == 1)
            #expect(try await point.purge([dependent.id]) == 0)
            gate.open()
            _ = try await handles[0].value
            try await point.enqueue(CallOperation(kind: .noop))
            #expect(try await point.status(of: dependent.id) == nil)
            #expect(try await point.status(of: dependency.id) != nil)
        }
    }

    @Test("S16: a purge record folds out the operations it names, and reads back as written")
    func purgeRecordReplays() throws {
        let kept = CallOperation(kind: .echo)
        let gone = CallOperation(kind: .echo)
        let date = Date(timeIntervalSince1970: 1_000)
        let purge = StorageRecord.purged([gone.id, kept.id], at: date)
        #expect(try StorageRecord(encoded: purge.encoded()) == purge)
        #expect(purge.kind == .purged)
        #expect(purge.purgedOperationIDs == [gone.id, kept.id])

        var replay = StoredState.Replay()
        replay.apply(.commit(snapshot: 1, operations: [kept, gone], at: date))
        replay.apply(.finished(gone.id, .failed(CallFailure(reason: "no", attempts: 1)), at: date))
        replay.apply(purge)
        // Only finished operations are purged: the unfinished one named by mistake stays.
        #expect(replay.state().operations.map(\.operation.id) == [kept.id])
    }

    @Test("S16: a cancelled operation keeps its last attempt's error and response, in memory and across a restart")
    func cancelledKeepsLastFailure() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/orders", .status(503, "down for maintenance"))
        let slowRetry = RetryPolicy(initialDelay: .seconds(3600), jitter: .none)
        let order = try CallOperation.http(HTTPCall(method: .post, url: server.url("/orders")), retryPolicy: slowRetry)
        try await withTemporaryFolder { folder in
            let configuration = DataPoint.Configuration(shutdownGracePeriod: .zero)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: configuration) { point in
                let events = point.events()
                try await point.enqueue(order)
                for await event in events where event.kind.isRetryScheduled && event.operationID == order.id { break }
                #expect(try await point.cancel(order.id))
                let status = try #require(try await point.status(of: order.id))
                #expect(status.state == .finished(.cancelled(.requested)))
                #expect(status.lastFailure?.response?.status == 503)
                #expect(status.lastFailure?.response?.rawString == "down for maintenance")
                #expect(status.lastFailure?.attempts == 1)
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: configuration) { point in
                let status = try #require(try point.operations(.deadLetters()).statuses.first)
                #expect(status.id == order.id)
                #expect(status.lastFailure?.response?.status == 503)
                #expect(status.lastFailure?.reason.contains("503") == true)
            }
            // The snapshot that a compaction writes keeps it too.
            var state = try FileStorage.read(at: folder.url)
            #expect(state.operations.first?.lastFailure?.response?.status == 503)
            state.operations.append(
                StoredOperation(operation: CallOperation(kind: .echo), snapshot: 9, enqueuedAt: Date()))
            var writer = ByteWriter()
            RecordCodec.encode(state, into: &writer)
            let decoded = try writer.bytes.withUnsafeBytes { bytes in
                var reader = ByteReader(bytes)
                return try RecordCodec.decodeState(from: &reader)
            }
            #expect(decoded.operations.map(\.lastFailure) == state.operations.map(\.lastFailure))
        }
    }
}
