import Foundation
import Relay
import RelayTesting
import Testing

/// The examples in the doc comments of operations, sequences, handles and queries, as they read there (see
/// `SnippetTests`).
@Suite("Doc comment examples: operations", .timeLimit(.minutes(3)))
struct OperationDocCommentTests {
    private static let echo = ClosureExecutor { operation, _ in .completed(operation.payload) }

    /// Registers "slow", whose attempts wait for `gate`.
    private static func registerSlow(on point: DataPoint, gate: Gate) {
        point.register(
            ClosureExecutor { _, _ in
                await gate.wait()
                return .completed(Data())
            }, for: "slow")
    }

    @Test("a sequence is registered and suspended")
    func sequence() async throws {
        try await DataPoint.testing { point, _ in
            let webhooks = try CallSequence(name: "webhooks", bunchSize: 16)
            try await point.upsertCallSequence(webhooks)
            try await webhooks.suspend(reason: "maintenance window")
            #expect(await webhooks.suspensionCount == 1)
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            #expect(await point.sequence(named: .data)?.bunchSize == 8)
        }
    }

    @Test("operations run in dependency order, and one is executed and awaited")
    func enqueueAndExecute() async throws {
        try await DataPoint.testing { point, _ in
            for kind: CallKind in ["upload", "notify", "fetch"] { point.register(Self.echo, for: kind) }
            let upload = CallOperation(kind: "upload", sequenceName: .uploads)
            let notify = CallOperation(kind: "notify", dependencies: [upload.id])
            let handles = try await point.enqueue([upload, notify])
            for handle in handles { #expect(try await handle.outcome == .completed(Data())) }

            let data = try await point.execute(CallOperation(kind: "fetch"))
            #expect(data.isEmpty)

            do {
                let fetch = CallOperation(kind: "fetch", payload: Data("user/42".utf8))
                let notify = CallOperation(kind: "notify", dependencies: [fetch.id], priority: 5)
                let handles = try await point.enqueue([fetch, notify])
                #expect(try await handles[0].value == Data("user/42".utf8))
            }
        }
    }

    @Test("a dependency added to an operation orders it")
    func addDependency() async throws {
        try await DataPoint.testing { point, _ in
            point.register(Self.echo, for: "upload")
            point.register(Self.echo, for: "notify")
            let upload = CallOperation(kind: "upload")
            var notify = CallOperation(kind: "notify")
            notify.addDependency(upload)
            try await point.enqueue([upload, notify])
            await point.settled()
            #expect(try await point.status(of: notify.id)?.state == .finished(.completed(Data())))
        }
    }

    @Test("a held operation waits until its date")
    func hold() async throws {
        try await DataPoint.testing { point, clock in
            point.register(Self.echo, for: "send")
            let id = try await point.enqueue(CallOperation(kind: "send"), after: .seconds(1)).id
            try await point.hold(id, until: point.now.addingTimeInterval(60), context: "rate-limit")
            let until = point.now.addingTimeInterval(60)
            #expect(try await point.status(of: id)?.state == .pending(.held(until: until)))
            clock.advance(by: .seconds(60))
            await point.settled()
            #expect(try await point.status(of: id)?.state.isTerminal == true)
        }
    }

    @Test("operations start at a date or after a delay")
    func scheduled() async throws {
        try await DataPoint.testing { point, clock in
            point.register(Self.echo, for: .http)
            let reminders = URL(string: "http://127.0.0.1:9/reminders")!
            let renewal = point.now.addingTimeInterval(86_400 + 10)
            let reminder = try CallOperation.http(HTTPCall(method: .post, url: reminders))
            try await point.enqueue([reminder], at: renewal.addingTimeInterval(-86_400))
            let followUp = CallOperation(kind: .http)
            try await point.enqueue(followUp, after: .seconds(3600))
            #expect(
                try await point.status(of: reminder.id)?.state
                    == .pending(.held(until: point.now.addingTimeInterval(10))))
            clock.advance(by: .seconds(3600))
            await point.settled()
            #expect(try await point.status(of: followUp.id)?.state.isTerminal == true)
        }
    }

    @Test("a handle's value, a status's wait, and a kind of one's own")
    func handleAndStatus() async throws {
        try await DataPoint.testing { point, _ in
            let gate = Gate()
            point.register(Self.echo, for: .sendEmail)
            point.register(Self.echo, for: "blocked")
            Self.registerSlow(on: point, gate: gate)
            let operation = CallOperation(kind: .sendEmail, payload: Data("hello".utf8))
            let handle = try await point.enqueue(operation)
            let data = try await handle.value
            #expect(data == Data("hello".utf8))

            let first = CallOperation(kind: "slow")
            let handles = try await point.enqueue([first, CallOperation(kind: "blocked", dependencies: [first.id])])
            let id = handles[1].id
            var printed = false
            if let status = try await point.status(of: id), case .pending(let waiting) = status.state {
                print("waiting for", waiting)
                printed = true
            }
            #expect(printed)
            gate.open()
            do {
                let handle = try await point.handle(for: id)
                let result = try await handle.outcome
                #expect(result == .completed(Data()))
            }
        }
    }

    @Test("a cycle is a typed error")
    func relayError() async throws {
        try await DataPoint.testing { point, _ in
            point.register(Self.echo, for: "a")
            var first = CallOperation(kind: "a")
            let second = CallOperation(kind: "a", dependencies: [first.id])
            first.addDependency(second)
            let operations = [first, second]
            var caught: [UUID] = []
            do {
                try await point.enqueue(operations)
            } catch let error as RelayError where error.code == .dependencyCycle {
                print("cycle through", error.operationIDs)
                caught = error.operationIDs
            }
            #expect(Set(caught) == [first.id, second.id])
        }
    }

    @Test("a patient retry policy")
    func retryPolicy() {
        let patient = RetryPolicy(maximumAttempts: 8, initialDelay: .milliseconds(200), maximumDelay: .seconds(30))
        #expect(patient.maximumAttempts == 8)
    }

    @Test("the pipeline's snapshot and dependents")
    func pipeline() async throws {
        try await DataPoint.testing { point, _ in
            let gate = Gate()
            Self.registerSlow(on: point, gate: gate)
            let root = CallOperation(kind: "slow")
            let id = root.id
            try await point.enqueue([root, CallOperation(kind: "slow", dependencies: [id])])
            let snapshot = point.pipeline.lastSnapshot
            let waiting = point.pipeline.dependents(of: id)
            #expect(snapshot == 1)
            #expect(waiting?.count == 1)
            gate.open()
        }
    }
}

extension CallKind {
    static let sendEmail: CallKind = "send-email"
}
