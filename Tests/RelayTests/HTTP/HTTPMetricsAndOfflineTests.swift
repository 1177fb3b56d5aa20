import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S14 HTTP metrics and per-attempt events; S9 dropped connections and unknown hosts", .timeLimit(.minutes(3)))
struct HTTPMetricsAndOfflineTests {
    @Test("S14: an HTTP operation's metrics carry its status, bytes, and times to headers and body on the clock")
    func metricsOfAnHTTPOperation() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let answer = #"{"id":7,"state":"accepted"}"#
        server.setDefault("/orders", LoopbackServer.Reply.json(answer, status: 201).heldUntilReleased())
        let body = Data(repeating: 0x61, count: 1000)
        try await withManualPoint { point, clock in
            let recorder = EventRecorder(point)
            let handle = try await point.enqueue(
                CallOperation.http(HTTPCall(method: .post, url: server.url("/orders"), body: .data(body))))
            await server.waitForRequests(1)
            clock.advance(by: .seconds(2))
            server.releaseStalled()
            #expect(try await handle.response.status == 201)
            let metrics = try #require(try await point.status(of: handle.id)?.metrics)
            #expect(metrics.httpStatus == 201)
            #expect(metrics.bytesSent == body.count)
            #expect(metrics.bytesReceived == answer.utf8.count)
            #expect(metrics.timeToResponseHeaders == .seconds(2))
            #expect(metrics.timeToEndOfBody == .seconds(2))
            #expect(metrics.attempts == 1)
            let finished = await recorder.waitFor { $0.operationID == handle.id && $0.kind.isTerminal }
            #expect(finished.first?.kind == .completed(metrics))
        }
        #expect(server.requests.first?.body == body)
    }

    @Test("S13: events(for:) carries each attempt's response or error, before what follows from the attempt")
    func attemptEvents() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.retryAfter("1"), .stall, .json(#"{"id":7}"#, status: 201)])
        let policy = RetryPolicy(initialDelay: .seconds(1), jitter: .none)
        let call = HTTPCall(method: .post, url: server.url("/orders"), timeout: .seconds(5))
        let operation = try CallOperation.http(call, retryPolicy: policy)
        try await withManualPoint { point, clock in
            let recorder = EventRecorder(point)
            try await point.suspend(reason: "subscribe first")
            let handle = try await point.enqueue(operation)
            let events = try point.events(for: handle.id)
            try await point.resume(reason: "go")
            _ = await recorder.waitFor { $0.kind.isRetryScheduled }
            clock.advance(by: .seconds(1))
            await server.waitForRequests(2)
            clock.advance(by: .seconds(5))
            _ = await recorder.waitFor(2) { $0.kind.isRetryScheduled }
            // The policy's backoff doubles: 2 s after the second attempt.
            clock.advance(by: .seconds(2))
            _ = try await handle.value

            var kinds: [CallEvent.Kind] = []
            for await event in events { kinds.append(event.kind) }
            let names = kinds.map(\.name)
            #expect(
                names == [
                    "started", "attemptEnded", "retryScheduled", "started", "attemptEnded", "retryScheduled",
                    "started", "attemptEnded", "completed",
                ]
            )
            let reports = kinds.compactMap(\.report)
            #expect(reports.map(\.attempt) == [1, 2, 3])
            #expect(reports.map(\.httpStatus) == [503, nil, 201])
            #expect(reports[0].response?.header("Retry-After") == "1")
            #expect(reports[0].error?.contains("answered 503") == true)
            #expect(reports[1].error?.contains("timed out after 5.0 seconds") == true)
            #expect(reports[2].error == nil)
            #expect(reports[2].response?.rawString == #"{"id":7}"#)
        }
        server.releaseStalled()
    }

    @Test("S9/S14: a dropped connection takes its destination offline, costs no attempt, shows in status and metrics")
    func droppedConnectionGoesOffline() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.dropConnection])
        server.setDefault("/orders", .status(201))
        let operation = try CallOperation.http(HTTPCall(method: .post, url: server.url("/orders")))
        try await withManualPoint { point, clock in
            let recorder = EventRecorder(point)
            let handle = try await point.enqueue(operation)
            let offline = await recorder.waitFor { $0.kind.isOffline }
            #expect(offline.first.map { "\($0.kind)" }?.contains("lost before a response") == true)
            let report = recorder.kinds(of: handle.id).compactMap(\.report).first
            #expect(report?.error?.contains("lost before a response") == true)

            let origin = "127.0.0.1:\(server.port)"
            guard case .pending(let waiting) = try await point.status(of: handle.id)?.state, let reason = waiting.reason
            else {
                Issue.record("expected the operation to wait for its destination")
                return
            }
            #expect(reason.contains(origin))
            #expect(await point.sequence(named: .data)?.offlineReason?.contains(origin) == true)
            #expect(point.metrics().total.offline == 1)
            #expect(point.metrics().total.description.hasPrefix("1 pending (1 offline)"))

            clock.advance(by: .milliseconds(250))
            #expect(try await handle.response.status == 201)
            #expect(try await point.status(of: handle.id)?.attempts == 1)
            #expect(await point.sequence(named: .data)?.offlineReason == nil)
            #expect(point.metrics().total.offline == 0)
        }
        #expect(server.requests(to: "/orders").compactMap { $0.header("Idempotency-Key") }.count == 2)
        #expect(Set(server.idempotencyKeys) == [operation.idempotencyKey])
    }

    @Test("S9: a host name that does not resolve takes only its own calls offline; cancelling them forgets it")
    func unresolvableHostGoesOfflineAndCancels() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/orders", .status(201))
        // The .invalid top-level domain never resolves (RFC 6761).
        let url = try #require(URL(string: "http://relay-test.invalid/orders"))
        try await withManualPoint { point, _ in
            let recorder = EventRecorder(point)
            let handle = try await point.enqueue(CallOperation.http(HTTPCall(method: .post, url: url)))
            let offline = await recorder.waitFor { $0.kind.isOffline }
            #expect(offline.first.map { "\($0.kind)" }?.contains("does not resolve") == true)
            #expect(try await point.status(of: handle.id)?.attempts == 0)
            // Another destination of the same sequence (a bunch of one) goes on while the first waits.
            let next = try await point.enqueue(CallOperation.http(HTTPCall(method: .post, url: server.url("/orders"))))
            #expect(try await next.response.status == 201)
            guard case .pending(let waiting) = try await point.status(of: handle.id)?.state, let reason = waiting.reason
            else {
                Issue.record("expected the call to the unknown host to wait for it")
                return
            }
            #expect(reason.contains("http://relay-test.invalid:80"))
            #expect(try await point.cancel(handle.id))
            #expect(try await handle.outcome == .cancelled(.requested))
            let online = await recorder.waitFor { $0.kind.isOnline && $0.sequenceName == .data }
            #expect(online.first.map { "\($0.kind)" }?.contains("no operation waits") == true)
            #expect(await point.sequence(named: .data)?.offlineReason == nil)
        }
    }
}
