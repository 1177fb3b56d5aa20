import Foundation
import Relay

// The code of the "Recipes" article, line for line, compiled with the tests (see SnippetTests); RecipesTests runs it.

enum RecipesSnippets {
    struct Invoice: Model {
        let id: Int
        var total: Int
    }

    static func webhooks(_ point: DataPoint, invoice: Invoice, subscribers: [URL]) async throws {
        try await point.upsertCallSequence(CallSequence(name: "webhooks", bunchSize: 16))
        let body = try JSONEncoder().encode(invoice)
        try await point.transaction { transaction in
            try transaction.upsert(invoice)
            for subscriber in subscribers {
                let delivery = HTTPCall(method: .post, url: subscriber, body: .data(body))
                transaction.enqueue(try CallOperation.http(delivery, sequenceName: "webhooks"))
            }
        }
    }

    static func offlineQueue(queueFolder: URL, profileURL: URL, profile: Data) async throws -> DataPoint {
        let point = try await DataPoint(storage: .file(at: queueFolder))
        let save = HTTPCall(method: .put, url: profileURL, body: .data(profile))
        let handle = try await point.enqueue(try CallOperation.http(save))
        _ = handle
        return point
    }

    static func deadLetters(_ point: DataPoint) async throws {
        for status in try point.operations(.deadLetters()).statuses {
            if case .finished(.failed(let failure)) = status.state, failure.response?.status == 409 {
                try await point.purge([status.id])  // the server refused it for good
            } else {
                try await point.replay(status.id)
            }
        }
    }

    static func progress(_ point: DataPoint, uploads: [CallOperation]) async throws {
        let events = point.events()
        let handles = try await point.enqueue(uploads)
        var finished = 0
        for await event in events where event.kind.isTerminal {
            finished += 1
            print("\(finished) of \(handles.count) uploads finished")
            if finished == handles.count { break }
        }
    }
}
