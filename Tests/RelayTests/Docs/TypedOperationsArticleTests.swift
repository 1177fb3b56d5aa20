import Foundation
import Relay
import Testing

// The code of the "Typed Operations" article, as it reads there.

struct Thumbnail: TypedOperation {
    static let kind: CallKind = "thumbnail"

    struct Input: Codable, Sendable {
        let imageID: String
        let width: Int
    }

    struct Output: Codable, Sendable {
        let url: String
    }

    func run(_ input: Input, context: CallContext) async throws -> Output {
        Output(url: "https://cdn.example.com/\(input.imageID)-\(input.width).jpg")
    }
}

@Suite("The Typed Operations article", .timeLimit(.minutes(3)))
struct TypedOperationsArticleTests {
    @Test("S12: the article's examples run as written")
    func articleExamples() async throws {
        var urls: [String] = []
        try await DataPoint.with(storage: .volatile) { point in
            point.register(Thumbnail())
            let small = try await point.execute(Thumbnail.self, Thumbnail.Input(imageID: "cat", width: 320))
            let handle = try await point.enqueue(Thumbnail.self, Thumbnail.Input(imageID: "dog", width: 640))
            let large = try await handle.value
            print(small.url, large.url)
            urls = [small.url, large.url]
        }
        #expect(urls == ["https://cdn.example.com/cat-320.jpg", "https://cdn.example.com/dog-640.jpg"])

        let published = try await DataPoint.with(storage: .volatile) { point in
            point.register(Thumbnail())
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "publish")
            let thumbnail = try TypedCall<Thumbnail>(Thumbnail.Input(imageID: "cat", width: 320))
            let publish = CallOperation(kind: "publish", dependencies: [thumbnail.id])
            let handles = try await point.enqueue([thumbnail.operation, publish])
            let url = try await TypedHandle<Thumbnail>(handles[0]).value.url
            _ = try await handles[1].outcome
            return url
        }
        #expect(published == "https://cdn.example.com/cat-320.jpg")
    }
}
