import Foundation
import Relay
import RelayTesting
import Testing

@Suite("Operations as values", .timeLimit(.minutes(1)))
struct OperationTests {
    @Test("an operation survives a JSON round trip, with kind and sequence as plain strings")
    func codableRoundTrip() throws {
        let operation = CallOperation(
            kind: "send-email",
            sequenceName: .uploads,
            dependencies: [UUID()],
            priority: 3,
            payload: Data("body".utf8),
            persistentUserInfo: ["tenant": "acme"],
            retryPolicy: RetryPolicy(maximumAttempts: 7, maximumElapsed: .seconds(90)),
            onDependencyFailure: .runAnyway,
            idempotencyKey: "order-42"
        )
        let encoded = try JSONEncoder().encode(operation)
        let json = try #require(String(data: encoded, encoding: .utf8))
        #expect(json.contains(#""kind":"send-email""#))
        #expect(json.contains(#""sequenceName":"uploads""#))
        let decoded = try JSONDecoder().decode(CallOperation.self, from: encoded)
        #expect(decoded == operation)
        #expect(decoded.idempotencyKey == "order-42")
    }

    @Test("an operation is a value: changing a copy leaves the original as it was")
    func valueSemantics() {
        let original = CallOperation(kind: "fetch", priority: 1, payload: Data("a".utf8))
        var copy = original
        #expect(copy == original)
        copy.priority = 2
        copy.payload = Data("b".utf8)
        copy.idempotencyKey = "key"
        #expect(original.priority == 1)
        #expect(original.payload == Data("a".utf8))
        #expect(original.idempotencyKey == original.id.uuidString.lowercased())
        #expect(copy.priority == 2 && copy.payload == Data("b".utf8) && copy.idempotencyKey == "key")
        #expect(copy != original)
        #expect(Set([original, copy, original]).count == 2)
    }

    @Test("the idempotency key is derived from the id unless set, and stays the same across attempts")
    func idempotencyKeyIsStable() async throws {
        let operation = CallOperation(kind: "flaky", retryPolicy: RetryPolicy(initialDelay: .zero, jitter: .none))
        #expect(operation.idempotencyKey == operation.id.uuidString.lowercased())
        let keys = Log<String>()
        try await withManualPoint { point, _ in
            point.register(
                ClosureExecutor { _, context in
                    keys.append(context.idempotencyKey)
                    return context.attempt < 3 ? .retry(reason: "again") : .completed(Data())
                },
                for: "flaky"
            )
            _ = try await point.execute(operation)
        }
        #expect(keys.all == Array(repeating: operation.idempotencyKey, count: 3))
    }
}
