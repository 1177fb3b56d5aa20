import Foundation
import Relay

// The code of the "Getting Started" article, line for line, compiled with the tests (see SnippetTests); what it leaves
// out comes in as parameters.

enum GettingStartedSnippets {
    struct Server: Sendable {
        func run(_ point: DataPoint) async throws {}
    }

    static func render(_ image: Data) async throws -> Data { image }

    struct Thumbnail: CallExecutor {
        func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
            let image = try await render(operation.payload)
            return .completed(image)
        }
    }

    static func register(_ point: DataPoint) {
        point.register(Thumbnail(), for: "thumbnail")
    }

    static func enqueueAndAwait(imageData: Data) async throws {
        try await DataPoint.with { point in
            point.register(Thumbnail(), for: "thumbnail")
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "notify")

            let thumbnail = CallOperation(kind: "thumbnail", payload: imageData)
            let notify = CallOperation(kind: "notify", dependencies: [thumbnail.id])
            let handles = try await point.enqueue([thumbnail, notify])

            let image = try await handles[0].value
            let outcome = try await handles[1].outcome
            _ = (image, outcome)
        }
    }

    static func service(server: Server) async throws {
        let point = try await DataPoint(storage: .volatile)
        point.register(Thumbnail(), for: "thumbnail")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            group.addTask { try await server.run(point) }
            try await group.next()
            group.cancelAll()
        }
    }

    static func badInput(_ point: DataPoint, operations: [CallOperation]) async throws {
        do {
            try await point.enqueue(operations)
        } catch let error as RelayError where error.code == .dependencyCycle {
            print("cycle through", error.operationIDs)
        }
    }

    static func observe(_ point: DataPoint) async {
        for await event in point.events() {
            print(event.sequenceNumber, event.operationID as Any, event.kind)
        }
    }
}

// The code of the ``Relay`` landing page and of the "Durability" article.
enum LandingPageSnippets {
    static func echo() async throws {
        try await DataPoint.with { point in
            point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
            let reply = try await point.execute(CallOperation(kind: "echo", payload: Data("hi".utf8)))
            _ = reply
        }
    }

    static func fileStore() async throws {
        let point = try await DataPoint(storage: .file(at: URL(fileURLWithPath: "/var/lib/orders/relay")))
        try await point.shutdown()
    }
}
