import Foundation
import Relay
import RelayTesting
import Testing

@Suite("The Recipes article", .timeLimit(.minutes(3)))
struct RecipesTests {
    @Test("Recipes: webhooks are committed with their invoice and each subscriber gets one delivery")
    func webhooks() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let subscribers = (1...3).map { server.url("/hooks/\($0)") }
        for index in 1...3 { server.setDefault("/hooks/\(index)", .status(204)) }
        let invoice = RecipesSnippets.Invoice(id: 9, total: 120)
        try await DataPoint.with(storage: .volatile, waitForPending: true) { point in
            try point.register(RecipesSnippets.Invoice.self, as: "invoices")
            try await RecipesSnippets.webhooks(point, invoice: invoice, subscribers: subscribers)
            try await point.idle()
            #expect(try point.model(RecipesSnippets.Invoice.self, id: 9)?.total == 120)
            #expect(point.operationCounts(sequence: "webhooks") == [.completed: 3])
        }
        for index in 1...3 {
            let body = try #require(server.requests(to: "/hooks/\(index)").first?.body)
            #expect(try JSONDecoder().decode(RecipesSnippets.Invoice.self, from: body).total == 120)
        }
    }

    @Test("Recipes: a queued call is stored at once in its file store, and sent when the queue runs")
    func offlineQueue() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/profile", .status(200))
        try await withTemporaryFolder { folder in
            let point = try await RecipesSnippets.offlineQueue(
                queueFolder: folder.url, profileURL: server.url("/profile"), profile: Data("{}".utf8))
            #expect(try FileStorage.read(at: folder.url).operations.count == 1)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                let queued = try #require(try point.operations().statuses.first)
                #expect(try await point.handle(for: queued.id).response.status == 200)
                try await point.shutdown()
                try await group.waitForAll()
            }
            #expect(server.requests(to: "/profile").count == 1)
        }
    }

    @Test("Recipes: a dead letter refused with 409 is purged, the others are replayed")
    func deadLetters() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/conflict", .status(409))
        server.script("/flaky", [.status(400)])
        server.setDefault("/flaky", .status(200))
        try await DataPoint.with(storage: .volatile) { point in
            let conflict = try CallOperation.http(HTTPCall(method: .put, url: server.url("/conflict")))
            let flaky = try CallOperation.http(HTTPCall(method: .put, url: server.url("/flaky")))
            _ = try await point.enqueue([conflict, flaky])
            try await point.idle()
            try await RecipesSnippets.deadLetters(point)
            try await point.idle()
            #expect(try await point.status(of: conflict.id) == nil)
            #expect(point.operationCounts() == [.failed: 1, .completed: 1])
        }
    }

    @Test("Recipes: the progress loop ends once every upload has finished")
    func progress() async throws {
        try await DataPoint.with(storage: .volatile) { point in
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "upload")
            let uploads = (0..<5).map { _ in CallOperation(kind: "upload", sequenceName: .uploads) }
            try await RecipesSnippets.progress(point, uploads: uploads)
            #expect(point.operationCounts() == [.completed: 5])
        }
    }
}
