import Foundation
import RelayTesting
import Testing

@testable import Relay

/// S9 over real HTTP: offline is scoped to a destination, ends at `maximumElapsed`, and cannot last forever against a
/// host that answers probes but drops every call.
@Suite("S9 offline destinations over HTTP", .timeLimit(.minutes(3)))
struct HTTPOfflineDestinationTests {
    @Test(
        "S9: calls to a closed port fail as offlineTooLong at maximumElapsed; a live host's call behind them completes")
    func closedPortEndsAtMaximumElapsed() async throws {
        let live = try LoopbackServer()
        defer { live.stop() }
        live.setDefault("/orders", .status(201))
        let closed = try LoopbackServer()
        let closedURL = closed.url("/orders")
        closed.stop()
        try await withManualPoint { point, clock in
            let recorder = EventRecorder(point)
            let policy = RetryPolicy(maximumAttempts: 2, maximumElapsed: .seconds(2))
            let stuck = try await point.enqueue(
                CallOperation.http(HTTPCall(method: .post, url: closedURL), retryPolicy: policy))
            _ = await recorder.waitFor { $0.kind.isOffline }
            // The same sequence, a bunch of one: the live host's call does not wait behind the closed port.
            let behind = try await point.enqueue(CallOperation.http(HTTPCall(method: .post, url: live.url("/orders"))))
            #expect(try await behind.response.status == 201)
            #expect(point.metrics().total.offline == 1)

            clock.advance(by: .seconds(2))
            guard case .failed(let failure) = try await stuck.outcome else {
                Issue.record("expected the call to the closed port to fail")
                return
            }
            #expect(failure.cause == .offlineTooLong)
            #expect(failure.attempts == 0)
            #expect(failure.reason.contains("maximum elapsed time of 2 s"))
            #expect(point.metrics().total.offline == 0)
        }
    }

    @Test("S12: execute against a closed port gives up at its deadline, cancels the call, and says it was offline")
    func executeEndsAtItsDeadline() async throws {
        let closed = try LoopbackServer()
        let closedURL = closed.url("/orders")
        closed.stop()
        #expect(RetryPolicy.default.maximumElapsed == .seconds(86_400), "an enqueued call's default ends too")
        try await withManualPoint { point, clock in
            let recorder = EventRecorder(point)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let error = await #expect(throws: RelayError.self) {
                        _ = try await point.execute(HTTPCall(method: .post, url: closedURL), deadline: .seconds(10))
                    }
                    #expect(error?.code == .deadlineExceeded)
                    let message = error?.message ?? ""
                    #expect(message.contains("did not finish within 10 s, so it was cancelled"), "\(message)")
                    #expect(message.contains("offline: \(closedURL.origin)"), "\(message)")
                    #expect(message.contains(", since "), "\(message)")
                    #expect(message.contains("after 0 attempts"), "\(message)")
                }
                let offline = await recorder.waitFor { $0.kind.isOffline }
                let id = try #require(offline.first?.operationID ?? recorder.events.first?.operationID)
                clock.advance(by: .seconds(10))
                try await group.waitForAll()
                guard case .finished(.cancelled) = try await point.status(of: id)?.state else {
                    Issue.record("the call was not cancelled: \(String(describing: try await point.status(of: id)))")
                    return
                }
            }
        }
    }

    @Test("S9: a host that answers probes but drops every call spends attempts after three rounds, then fails")
    func answeringHostThatDropsCallsFails() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/orders", .dropConnection)
        try await withManualPoint { point, clock in
            let recorder = EventRecorder(point)
            let policy = RetryPolicy(maximumAttempts: 2, initialDelay: .milliseconds(100))
            let handle = try await point.enqueue(
                CallOperation.http(HTTPCall(method: .post, url: server.url("/orders")), retryPolicy: policy))
            for round in 1...OfflineDestinations.freeRounds {
                _ = await recorder.waitFor(round) { $0.kind.isOffline }
                #expect(try await point.status(of: handle.id)?.attempts == 0)
                clock.advance(by: .milliseconds(250))
            }
            _ = await recorder.waitFor { $0.kind.isRetryScheduled }
            clock.advance(by: .seconds(1))
            guard case .failed(let failure) = try await handle.outcome else {
                Issue.record("expected the call to fail")
                return
            }
            #expect(failure.cause == .retriesExhausted)
            #expect(failure.attempts == 2)
            #expect(failure.reason.contains("answered 3 probes"))
            // Three free rounds, then two attempts: five sends, not one per probe for as long as the host answers.
            #expect(recorder.kinds(of: handle.id).filter(\.isStarted).count == 5)
        }
        // The transport may send a request again once when a reused connection drops; never more.
        #expect((5...10).contains(server.requests(to: "/orders").count))
        #expect(server.requests(to: "/").count == 3)
    }
}
