import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

@Suite("S21 completion with changes", .timeLimit(.minutes(3)))
struct CompletionWithChangesTests {
    @Test("S21: an executor completes with model changes in the transition that records its end")
    func completesWithChanges() async throws {
        let storage = RecordingStorage()
        try await withManualPoint(storage: storage) { point, _ in
            try point.register(Order.self, as: "orders")
            let order = Order(id: UUID(), total: 99)
            point.register(
                ClosureExecutor { _, context in
                    try context.stage { tx in try tx.upsert(order) }
                    return .completed(Data("done".utf8))
                }, for: "import")
            let operation = CallOperation(kind: "import")
            #expect(try await point.enqueue(operation).value == Data("done".utf8))
            #expect(try point.model(Order.self, id: order.id) == order)
            let kinds = storage.records.map(\.kind)
            let finished = try #require(kinds.firstIndex(of: .finished))
            #expect(kinds[finished + 1] == .models)
            #expect(storage.records[finished + 1].snapshot == 1)
        }
    }

    @Test("S21: changes staged by an attempt that retries, fails or throws are discarded")
    func failedAttemptsDiscardChanges() async throws {
        try await withManualPoint { point, clock in
            try point.register(Customer.self, as: "customers")
            let attempts = Mutex(0)
            point.register(
                ClosureExecutor { operation, context in
                    let attempt = attempts.withLock { count in
                        count += 1
                        return count
                    }
                    try context.stage { tx in try tx.upsert(Customer(id: "attempt-\(attempt)", name: "")) }
                    switch String(decoding: operation.payload, as: UTF8.self) {
                    case "fails": return .failed(reason: "no")
                    case "throws": throw CancellationError()
                    default:
                        return context.attempt == 1 ? .retry(after: .seconds(1), reason: "again") : .completed(Data())
                    }
                }, for: "stage")
            let policy = RetryPolicy(maximumAttempts: 1)
            _ = try await point.enqueue(CallOperation(kind: "stage", payload: Data("fails".utf8), retryPolicy: policy))
                .outcome
            _ = try await point.enqueue(CallOperation(kind: "stage", payload: Data("throws".utf8), retryPolicy: policy))
                .outcome
            let retried = try await point.enqueue(CallOperation(kind: "stage"))
            try await point.idle()
            clock.advance(by: .seconds(1))
            _ = try await retried.value
            // Only the completing attempt's change is there: the fourth call of the executor.
            #expect(try point.models(Customer.self).map(\.id) == ["attempt-4"])
        }
    }

    @Test("S21: after a crash, a completion and the changes it committed are both there")
    func survivesACrash() async throws {
        try await withTemporaryFolder { folder in
            let order = Order(id: UUID(), total: 5)
            let operation = CallOperation(kind: "import")
            let executor = ClosureExecutor { _, context in
                try context.stage { tx in try tx.upsert(order) }
                return .completed(Data())
            }
            let reopened = try await DataPoint.crashAndReopen(
                at: folder.url, clock: ManualClock(), prepare: { $0.register(executor, for: "import") }
            ) { point in
                try point.register(Order.self, as: "orders")
                _ = try await point.enqueue(operation).value
            }
            try reopened.register(Order.self, as: "orders")
            #expect(try await reopened.status(of: operation.id)?.state.isTerminal == true)
            #expect(try reopened.model(Order.self, id: order.id) == order)
            try await reopened.shutdown()
        }
    }

    @Test("S23: a completion that relates a model never stored fails, and the document is unchanged")
    func completionRelatingAPhantomFails() async throws {
        try await withManualPoint { point, _ in
            try point.register(Order.self, as: "orders")
            try point.register(Customer.self, as: "customers")
            let stored = Order(id: UUID(), total: 1)
            try await point.transaction { tx in try tx.upsert(stored) }
            let phantom = Customer(id: "never-stored", name: "")
            point.register(
                ClosureExecutor { _, context in
                    try context.stage { tx in
                        try tx.upsert(Order(id: UUID(), total: 2))
                        try tx.relate(stored, .owns, phantom)
                    }
                    return .completed(Data())
                }, for: "relate")
            guard case .failed(let failure) = try await point.enqueue(CallOperation(kind: "relate")).outcome else {
                Issue.record("expected the completion to fail")
                return
            }
            #expect(failure.reason.contains("never-stored"))
            #expect(try point.models(Order.self) == [stored])
            #expect(try point.relatedAliases(to: stored, by: .owns).isEmpty)
        }
    }

    @Test("S23: a completion that removes a model removes the relations that name it")
    func completionRemovingAModelRemovesItsRelations() async throws {
        try await withManualPoint { point, _ in
            try point.register(Order.self, as: "orders")
            try point.register(Customer.self, as: "customers")
            let order = Order(id: UUID(), total: 1)
            let customer = Customer(id: "ada", name: "Ada")
            try await point.transaction { tx in
                try tx.upsert(order)
                try tx.upsert(customer)
                try tx.relate(order, .free, customer)
            }
            #expect(try point.relatedAliases(to: order, by: .free).count == 1)
            point.register(
                ClosureExecutor { _, context in
                    try context.stage { tx in try tx.remove(customer) }
                    return .completed(Data())
                }, for: "remove")
            _ = try await point.enqueue(CallOperation(kind: "remove")).value
            #expect(try point.model(Customer.self, id: "ada") == nil)
            #expect(try point.relatedAliases(to: order, by: .free).isEmpty)
        }
    }
}
