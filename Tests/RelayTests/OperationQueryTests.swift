import Foundation
import RelayTesting
import Synchronization
import Testing

@testable import Relay

@Suite("Listing, counting and replaying operations", .timeLimit(.minutes(3)))
struct OperationQueryTests {
    @Test("S14: operations list by state, sequence and kind, oldest first, a page at a time, and count the same")
    func listsAndCounts() async throws {
        try await withManualPoint { point, _ in
            let gate = Gate()
            point.registerGated(gate)
            let done = try await point.enqueue((0..<5).map { CallOperation(kind: .echo, payload: Data([UInt8($0)])) })
            for handle in done { _ = try await handle.value }
            let running = try await point.enqueue(CallOperation(kind: .gated))
            await gate.waitForArrivals(1)
            let uploads = try await point.enqueue([
                CallOperation(kind: .echo, sequenceName: .uploads), CallOperation(kind: .noop, sequenceName: .uploads),
            ])
            for handle in uploads { _ = try await handle.value }
            try await point.suspend()
            let pending = try await point.enqueue([CallOperation(kind: .echo), CallOperation(kind: .echo)])

            // Everything, oldest first, two to a page.
            var query = OperationQuery(limit: 2)
            var ids: [UUID] = []
            repeat {
                let page = try point.operations(query)
                #expect(page.statuses.count <= 2)
                ids += page.statuses.map(\.id)
                query.after = page.next
            } while query.after != nil
            #expect(ids == (done + [running] + uploads + pending).map(\.id))

            #expect(try point.operations(OperationQuery(states: [.pending])).statuses.map(\.id) == pending.map(\.id))
            #expect(try point.operations(OperationQuery(states: [.running])).statuses.map(\.id) == [running.id])
            #expect(try point.operations(OperationQuery(sequence: .uploads)).statuses.map(\.id) == uploads.map(\.id))
            #expect(
                try point.operations(OperationQuery(states: [.completed], kind: .noop)).statuses.map(\.id)
                    == [uploads[1].id])
            #expect(point.operationCounts() == [.completed: 7, .running: 1, .pending: 2])
            #expect(point.operationCounts(sequence: .uploads, kind: .echo) == [.completed: 1])

            // A page keeps its place while operations come and go.
            let first = try point.operations(OperationQuery(limit: 3))
            try await point.enqueue(CallOperation(kind: .echo))
            let second = try point.operations(OperationQuery(limit: 3, after: first.next))
            #expect(second.statuses.map(\.id) == Array((done + [running] + uploads).map(\.id)[3..<6]))

            // A cursor goes through a link's text and through JSON, and comes back the same.
            let cursor = try #require(first.next)
            #expect(OperationPage.Cursor(cursor.description) == cursor && cursor.description == "\(cursor.order).0")
            let json = try JSONEncoder().encode(["after": cursor])
            #expect(String(decoding: json, as: UTF8.self) == "{\"after\":\"\(cursor)\"}")
            #expect(try JSONDecoder().decode([String: OperationPage.Cursor].self, from: json) == ["after": cursor])
            for text in ["", "12", "12.", ".3", "-1.0", "1.2.3"] { #expect(OperationPage.Cursor(text) == nil) }
            #expect(throws: DecodingError.self) {
                try JSONDecoder().decode(OperationPage.Cursor.self, from: Data("\"x\"".utf8))
            }

            let error = #expect(throws: RelayError.self) { try point.operations(OperationQuery(limit: 0)) }
            #expect(error?.code == .invalidArgument)
            gate.open()
            try await point.resume()
        }
    }

    @Test("S16: a failed operation replays as a new one with its payload and idempotency key; the original stays")
    func replaysFailedOperations() async throws {
        try await withManualPoint { point, _ in
            let attempts = Mutex(0)
            point.register(
                ClosureExecutor { operation, context in
                    let attempt = attempts.withLock {
                        $0 += 1
                        return $0
                    }
                    guard attempt > 1 else { return .failed(reason: "out of stock") }
                    return .completed(Data(context.idempotencyKey.utf8) + operation.payload)
                }, for: "order")
            let original = CallOperation(
                kind: "order", payload: Data([42]), persistentUserInfo: ["shop": "north"], retryPolicy: .never)
            let failed = try await point.enqueue(original)
            _ = try? await failed.value
            #expect(try point.operations(OperationQuery(states: [.failed])).statuses.map(\.id) == [original.id])

            let replayed = try await point.replay(original.id)
            #expect(replayed.id != original.id)
            #expect(try await replayed.value == Data(original.idempotencyKey.utf8) + Data([42]))
            let copy = try #require(point.pipeline.operation(replayed.id))
            #expect(copy.persistentUserInfo == ["shop": "north"])
            #expect(copy.idempotencyKey == original.idempotencyKey)
            guard case .finished(.failed) = try await point.status(of: original.id)?.state else {
                Issue.record("the original's terminal state changed")
                return
            }

            let notReplayable = await #expect(throws: RelayError.self) { try await point.replay(replayed.id) }
            #expect(notReplayable?.code == .notReplayable)
            let unknown = await #expect(throws: RelayError.self) { try await point.replay(UUID()) }
            #expect(unknown?.code == .unknownOperation)
        }
    }
}
