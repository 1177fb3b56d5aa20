import Foundation
import Relay
import RelayTesting
import Testing

@Suite("Operations as values", .timeLimit(.minutes(3)))
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

    @Test("new operations get random version 4 UUIDs, all different when many tasks make them at once")
    func defaultIdentifiers() async throws {
        let ids = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<25_000).map { _ in CallOperation(kind: "fetch").id } }
            }
            return await group.reduce(into: [UUID]()) { $0 += $1 }
        }
        #expect(ids.count == 100_000)
        #expect(Set(ids).count == ids.count)
        let versions = Set(ids.map { $0.uuid.6 >> 4 })
        let variants = Set(ids.map { $0.uuid.8 >> 6 })
        #expect(versions == [4])
        #expect(variants == [0b10])
        // Random bits: across so many ids every value of the first byte turns up.
        #expect(Set(ids.map(\.uuid.0)).count == 256)
        let call = HTTPCall(method: .get, url: try #require(URL(string: "http://127.0.0.1:9/")))
        #expect(try CallOperation.http(call).id != CallOperation.http(call).id)
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

    @Test("S5: addDependency and addDependencies take ids, operations or typed calls, and the engine honours them")
    func addingDependencies() async throws {
        try await withManualPoint { point, _ in
            let order = Log<Int>()
            point.register(
                ClosureExecutor { operation, _ in
                    order.append(Int(operation.payload.first ?? 0))
                    return .completed(Data())
                }, for: "ordered")
            point.register(Thumbnail())
            let first = CallOperation(kind: "ordered", payload: Data([1]))
            let second = CallOperation(kind: "ordered", payload: Data([2]))
            var thumbnail = try TypedCall<Thumbnail>(.init(imageID: "a", width: 1))
            thumbnail.addDependency(first.id)
            thumbnail.addDependencies([second.id])
            var last = CallOperation(kind: "ordered", payload: Data([3]))
            last.addDependency(first)
            last.addDependencies([second])
            last.addDependency(thumbnail.id)
            last.addDependencies([first.id, second.id])
            #expect(last.dependencies == [first.id, second.id, thumbnail.id])
            #expect(thumbnail.operation.dependencies == [first.id, second.id])
            let handles = try await point.enqueue([last, thumbnail.operation, second, first])
            _ = try await handles[0].outcome
            #expect(order.all.last == 3)
            #expect(Set(order.all.prefix(2)) == [1, 2])
        }
    }
}
