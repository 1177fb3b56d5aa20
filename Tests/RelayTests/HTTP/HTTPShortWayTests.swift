import Foundation
import RelayTesting
import Testing

@testable import Relay

/// One HTTP call takes the short way: its request is decoded once for all its attempts, and an accepted response
/// travels once, in the outcome.
@Suite("One HTTP call's request and response, each once", .timeLimit(.minutes(3)))
struct HTTPShortWayTests {
    @Test("every attempt of an operation reads the call decoded by its first attempt")
    func requestDecodedOnce() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.status(503), .status(503)])
        server.setDefault("/orders", .status(201))
        let call = HTTPCall(method: .post, url: server.url("/orders"), body: .data(Data("order".utf8)))
        // Made from its payload, as a reopened store makes it: nothing is decoded yet.
        let operation = CallOperation(
            kind: .http, payload: call.payload, retryPolicy: RetryPolicy(initialDelay: .zero, jitter: .none))
        #expect(!operation.hasDecodedHTTPCall)
        try await withManualPoint { point, _ in
            let handle = try await point.enqueue(operation)
            #expect(try await handle.response.status == 201)
            #expect(try await point.status(of: handle.id)?.attempts == 3)
        }
        // The engine's copies share what the first attempt decoded with this one.
        #expect(operation.hasDecodedHTTPCall)
        #expect(try operation.decodedHTTPCall() == call)
        #expect(server.requests.map(\.body) == Array(repeating: Data("order".utf8), count: 3))
        // An operation made from a call keeps that call; nothing decodes it again.
        #expect(try CallOperation.http(call).hasDecodedHTTPCall)
    }

    @Test("S13: an accepted response travels once, in the outcome, and its attempt's report reads it from there")
    func responseTravelsOnce() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.json(#"{"error":"busy"}"#, status: 503)])
        server.setDefault("/orders", .json(#"{"id":7}"#, status: 201))
        let operation = try CallOperation.http(
            HTTPCall(method: .post, url: server.url("/orders")),
            retryPolicy: RetryPolicy(initialDelay: .zero, jitter: .none))
        try await withManualPoint { point, _ in
            try await point.suspend(reason: "subscribe first")
            let handle = try await point.enqueue(operation)
            let events = try point.events(for: handle.id)
            try await point.resume(reason: "go")
            let response = try await handle.response
            var reports: [AttemptReport] = []
            for await event in events {
                if case .attemptEnded(let report) = event.kind.value { reports.append(report) }
            }
            #expect(reports.map(\.httpStatus) == [503, 201])
            // The refused response is carried by its report, the accepted one only by the result.
            #expect(reports[0].carriedResponse?.rawString == #"{"error":"busy"}"#)
            #expect(reports[1].carriedResponse == nil)
            #expect(reports[1].response == response)
            #expect(response.rawString == #"{"id":7}"#)
        }
    }
}
