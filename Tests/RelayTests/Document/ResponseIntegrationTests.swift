import Foundation
import RelayTesting
import Testing

@testable import Relay

@Suite("S21 HTTP responses kept as models", .timeLimit(.minutes(3)))
struct ResponseIntegrationTests {
    @Test("S21: a call that names a collection upserts its decoded response there, in the commit of its completion")
    func responseIsKept() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/customers/7", .json(#"{"id":"7","name":"Ada"}"#))
        server.setDefault("/list", .json(#"[1,2]"#))
        try await withManualPoint { point, _ in
            try point.register(Customer.self, as: "customers")
            let call = HTTPCall(url: server.url("/customers/7"), responseCollection: "customers")
            let handle = try await point.enqueue(CallOperation.http(call))
            _ = try await handle.response
            #expect(try point.model(Customer.self, id: "7") == Customer(id: "7", name: "Ada"))

            let unregistered = try await point.enqueue(
                CallOperation.http(HTTPCall(url: server.url("/customers/7"), responseCollection: "people")))
            guard case .failed(let failure) = try await unregistered.outcome else {
                Issue.record("expected a call whose collection holds no type to fail")
                return
            }
            #expect(failure.reason.contains("no type is registered as the collection people"))

            let notAModel = try await point.enqueue(
                CallOperation.http(HTTPCall(url: server.url("/list"), responseCollection: "customers")))
            guard case .failed(let listFailure) = try await notAModel.outcome else {
                Issue.record("expected a body without an id to fail the call")
                return
            }
            #expect(listFailure.reason.contains("not a JSON object with an id"))
            #expect(try point.count(of: Customer.self) == 1)
        }
    }

    @Test("S21: the collection travels in the stored call, and a call without it stores as before")
    func collectionIsStored() throws {
        let url = try #require(URL(string: "https://example.com/customers/7"))
        let kept = try CallOperation.http(HTTPCall(url: url, responseCollection: "customers"))
        let plain = try CallOperation.http(HTTPCall(url: url))
        #expect(try HTTPCall(payload: kept.payload).responseCollection == "customers")
        #expect(try HTTPCall(payload: plain.payload).responseCollection == nil)
        #expect(kept.payload.count == plain.payload.count + 1 + "customers".utf8.count)
    }
}
