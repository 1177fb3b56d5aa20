import Foundation
import Relay
import RelayTesting
import Testing

/// The examples in the doc comments of typed operations, stores and the testing tools, as they read there (see
/// `SnippetTests`).
@Suite("Doc comment examples: typed operations, stores and testing tools", .timeLimit(.minutes(3)))
struct TypedAndToolsDocCommentTests {
    struct SendWelcome: TypedOperation {
        static let kind: CallKind = "send-welcome"

        struct Input: Codable, Sendable { let email: String }
        struct Output: Codable, Sendable { let messageID: String }

        func run(_ input: Input, context: CallContext) async throws -> Output {
            Output(messageID: try await mailer.send(to: input.email))
        }
    }

    struct Resize: TypedOperation {
        static let kind: CallKind = "resize"

        struct Input: Codable, Sendable {
            let image: UUID
            let width: Int
        }

        func run(_ input: Input, context: CallContext) async throws -> String {
            "\(input.image)-\(input.width).png"
        }
    }

    @Test("typed operations run, are enqueued and awaited, and are depended on")
    func typed() async throws {
        try await DataPoint.testing { point, _ in
            point.register(SendWelcome())
            let sent = try await point.execute(SendWelcome.self, SendWelcome.Input(email: "ada@example.com"))
            #expect(sent.messageID == "message-to-ada@example.com")
            do {
                let handle = try await point.enqueue(SendWelcome.self, SendWelcome.Input(email: "ada@example.com"))
                let sent = try await handle.value
                #expect(sent.messageID == "message-to-ada@example.com")
            }
            point.register(Resize())
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "notify")
            let id = UUID()
            let resize = try TypedCall<Resize>(Resize.Input(image: id, width: 320), sequenceName: .uploads)
            let notify = CallOperation(kind: "notify", dependencies: [resize.id])
            let handles = try await point.enqueue([resize.operation, notify])
            let thumbnail = try await TypedHandle<Resize>(handles[0]).value
            #expect(thumbnail == "\(id)-320.png")
        }
    }

    @Test("a volatile store and a file store in a folder of one's own")
    func stores() async throws {
        let temporary = TemporaryFolder()
        defer { temporary.remove() }
        do {
            let point = try await DataPoint(storage: .volatile)
            try await point.shutdown()
        }
        let folder = temporary.url
        let point = try await DataPoint(storage: .file(at: folder))
        try await point.shutdown()
        #expect(FileManager.default.fileExists(atPath: folder.path))
    }

    // The example of `DataPoint.testing`, whole.
    @Test func retriesAfterTheDelay() async throws {
        let flaky = ClosureExecutor { _, context in
            context.attempt == 1 ? .retry(after: .seconds(10), reason: "busy") : .completed(Data("done".utf8))
        }
        try await DataPoint.testing { point, clock in
            point.register(flaky, for: "flaky")
            let handle = try await point.enqueue(CallOperation(kind: "flaky"))
            try await point.idle()
            clock.advance(by: .seconds(10))
            _ = try await handle.value
            #expect(try await handle.value == Data("done".utf8))
        }
    }

    @Test("a gate holds an executor, a recorder waits for events, and a manual clock ends a hold")
    func tools() async throws {
        let clock = ManualClock()
        let point = try await DataPoint(storage: .volatile, clock: clock)
        let gate = Gate()
        point.register(
            ClosureExecutor { _, _ in
                await gate.wait()
                return .completed(Data())
            }, for: "slow")
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 3))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            let recorder = EventRecorder(point)
            let operations = (0..<3).map { _ in CallOperation(kind: "slow") }
            // ... enqueue, then check that the operation runs ...
            try await point.enqueue(operations)
            let starts = await recorder.waitFor(3) { $0.kind.isStarted }
            #expect(starts.count == 3)
            await gate.waitForArrivals(1)
            gate.open()
            await point.settled()
            // ... hold an operation for five seconds ...
            let held = try await point.enqueue(CallOperation(kind: "slow"), after: .seconds(5))
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(5))
            #expect(try await held.value == Data())
            try await point.shutdown()
        }
    }

    @Test("an operation survives a simulated crash")
    func crash() async throws {
        let temporary = TemporaryFolder()
        defer { temporary.remove() }
        let folder = temporary.url
        let gate = Gate()
        let executor = ClosureExecutor { _, _ in
            await gate.wait()
            return .completed(Data())
        }
        let prepare: (DataPoint) -> Void = { $0.register(executor, for: "send") }
        let reopened = try await DataPoint.crashAndReopen(at: folder, prepare: prepare) { point in
            try await point.enqueue(CallOperation(kind: "send"))
        }
        #expect(reopened.recoveryReport?.operationsRecovered == 1)
        try await reopened.shutdown()
    }

    @Test("a loopback server scripts a retry, then an answer")
    func loopbackServer() async throws {
        try await DataPoint.with(storage: .volatile) { point in
            let server = try LoopbackServer()
            server.script("/orders", [.retryAfter("1"), .json(#"{"id": 7}"#, status: 201)])
            let response = try await point.execute(HTTPCall(method: .post, url: server.url("/orders")))
            #expect(server.requests(to: "/orders").count == 2)
            server.stop()
            #expect(response.status == 201)
        }
    }
}

/// Sends mail; here, it names the message after its recipient.
private struct Mailer {
    func send(to address: String) async throws -> String { "message-to-\(address)" }
}

private let mailer = Mailer()
