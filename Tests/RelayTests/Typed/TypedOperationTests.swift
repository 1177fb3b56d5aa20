import Foundation
import RelayTesting
import Testing

@testable import Relay

/// Squares a number; records each attempt's input, and fails the attempts before `succeedsAt`.
private struct Square: TypedOperation {
    static let kind: CallKind = "square"

    struct Input: Codable, Sendable, Equatable { let value: Int }
    struct Output: Codable, Sendable, Equatable { let value: Int }

    var attempts = Log<Int>()
    var succeedsAt = 1

    func run(_ input: Input, context: CallContext) async throws -> Output {
        attempts.append(input.value)
        guard context.attempt >= succeedsAt else { throw CancellationError() }
        return Output(value: input.value * input.value)
    }
}

/// An input that never encodes.
private struct UnencodableInput: TypedOperation {
    static let kind: CallKind = "unencodable"

    struct Input: Codable, Sendable {
        init() {}
        init(from decoder: any Decoder) throws {}
        func encode(to encoder: any Encoder) throws {
            throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "never"))
        }
    }

    func run(_ input: Input, context: CallContext) async throws -> Int { 0 }
}

@Suite("Typed operations", .timeLimit(.minutes(3)))
struct TypedOperationTests {
    @Test("S12: a typed operation takes a Codable input and gives its Codable output, stored as JSON")
    func typedInputAndOutput() async throws {
        try await withManualPoint { point, _ in
            let square = Square()
            point.register(square)
            #expect(try await point.execute(Square.self, .init(value: 7)) == .init(value: 49))
            let handle = try await point.enqueue(Square.self, .init(value: 3))
            #expect(try await handle.value == .init(value: 9))
            #expect(try await handle.handle.value == Data(#"{"value":9}"#.utf8))
            #expect(square.attempts.all == [7, 3])
            let call = try TypedCall<Square>(.init(value: 5), priority: 2)
            #expect(call.operation.kind == Square.kind)
            #expect(call.operation.priority == 2)
            #expect(try call.input == .init(value: 5))
        }
    }

    @Test("S5: typed and untyped operations depend on each other in one commit")
    func dependenciesAcrossTypedAndUntyped() async throws {
        try await withManualPoint { point, _ in
            let square = Square()
            point.register(square)
            let order = Log<String>()
            point.register(
                ClosureExecutor { operation, _ in
                    order.append("untyped \(operation.payload.count)")
                    return .completed(Data())
                }, for: "untyped")
            let first = CallOperation(kind: "untyped", payload: Data([1]))
            let typed = try TypedCall<Square>(.init(value: 4), dependencies: [first.id])
            let last = CallOperation(kind: "untyped", dependencies: [typed.id], payload: Data([1, 2]))
            let handles = try await point.enqueue([first, typed.operation, last])
            _ = try await handles[2].outcome
            #expect(try await TypedHandle<Square>(handles[1]).value == .init(value: 16))
            #expect(order.all == ["untyped 1", "untyped 2"])
            #expect(square.attempts.all == [4])
        }
    }

    @Test("S20: a transaction commits a typed operation with a model, and a reopened store runs it with its input")
    func typedOperationInTransactionSurvivesReopen() async throws {
        try await withTemporaryFolder { folder in
            let call = try TypedCall<Square>(.init(value: 6))
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Customer.self, as: "customers")
                point.register(Square())
                _ = try await point.suspend()
                let handles = try await point.transaction { tx in
                    try tx.upsert(Customer(id: "ada", name: "Ada"))
                    tx.enqueue(call)
                }
                #expect(handles.map(\.id) == [call.id])
            }
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Customer.self, as: "customers")
                let square = Square()
                point.register(square)
                #expect(try point.model(Customer.self, id: "ada")?.name == "Ada")
                let handle = try await point.handle(for: call.id, as: Square.self)
                _ = try await point.resume()
                #expect(try await handle.value == .init(value: 36))
                #expect(square.attempts.all == [6])
                await #expect(throws: RelayError.self) { try await point.handle(for: UUID(), as: Square.self) }
            }
        }
    }

    @Test("S8: a typed operation's failed attempts are retried under its policy, then fail it")
    func failedAttemptsRetry() async throws {
        try await withManualPoint { point, clock in
            let square = Square(succeedsAt: 3)
            point.register(square)
            let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(1), jitter: .none)
            let handle = try await point.enqueue(try TypedCall<Square>(.init(value: 2), retryPolicy: policy))
            for _ in 0..<2 {
                await clock.waitForSleepers(1)
                clock.advance(by: .seconds(10))
            }
            #expect(try await handle.value == .init(value: 4))
            #expect(square.attempts.all == [2, 2, 2])

            let never = Square(succeedsAt: 99)
            point.register(never)
            let failing = try await point.enqueue(try TypedCall<Square>(.init(value: 1), retryPolicy: .never))
            let error = await #expect(throws: RelayError.self) { try await failing.value }
            #expect(error?.code == .operationFailed)
        }
    }

    @Test("S17: an input that does not encode, or an output read as another type, is operationEncoding")
    func encodingErrors() async throws {
        try await withManualPoint { point, _ in
            point.register(UnencodableInput())
            let encoding = await #expect(throws: RelayError.self) {
                try await point.enqueue(UnencodableInput.self, .init())
            }
            #expect(encoding?.code == .operationEncoding)
            #expect((point.metrics().sequences[.data]?.pending ?? 0) == 0, "nothing was enqueued")
            // An echo of bytes that are no JSON number, read as a typed output.
            let echoed = try await point.enqueue(CallOperation(kind: .echo, payload: Data("no".utf8)))
            let decoding = await #expect(throws: RelayError.self) { try await TypedHandle<Square>(echoed).value }
            #expect(decoding?.code == .operationEncoding)
            await #expect(throws: RelayError.self) { try await point.handle(for: echoed.id, as: Square.self) }
        }
    }
}
