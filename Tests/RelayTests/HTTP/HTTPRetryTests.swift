import Foundation
import Relay
import RelayTesting
import Testing

@Suite("HTTP retries, timeouts, cancellation and offline suspension", .timeLimit(.minutes(3)))
struct HTTPRetryTests {
    /// Runs a DataPoint on a manual clock while `body` runs.
    private func running(
        _ body: (DataPoint, ManualClock, EventRecorder) async throws -> Void
    ) async throws {
        let clock = ManualClock()
        let point = try await DataPoint(storage: .volatile, clock: clock)
        let recorder = EventRecorder(point)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            try await body(point, clock, recorder)
            try await point.shutdown()
            try await group.waitForAll()
        }
    }

    private func post(_ url: URL, timeout: Duration = .seconds(60), retry: RetryPolicy = .default) throws
        -> CallOperation
    {
        try CallOperation.http(
            HTTPCall(method: .post, url: url, body: .data(Data(#"{"sku":"A-1"}"#.utf8)), timeout: timeout),
            retryPolicy: retry
        )
    }

    @Test("S16: an unsafe method sends the same Idempotency-Key on every attempt, after the Retry-After delay")
    func idempotencyKeyAndRetryAfterSeconds() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.retryAfter("2"), .json(#"{"id":7}"#, status: 201)])
        let operation = try post(server.url("/orders"))
        try await running { point, clock, recorder in
            let handle = try await point.enqueue(operation)
            let retry = await recorder.waitFor { $0.kind.isRetryScheduled }
            #expect(retry.first?.kind.retryDate?.timeIntervalSince(point.now) == 2)
            clock.advance(by: .seconds(2))
            #expect(try await handle.response.status == 201)
        }
        #expect(server.idempotencyKeys == [operation.idempotencyKey, operation.idempotencyKey])
    }

    @Test("Retry-After as an HTTP date is honoured, and a long one is cut to the call's bound")
    func retryAfterDateAndBound() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        try await running { point, _, recorder in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            // A whole second, since an HTTP date has no fraction: the formatter rounds to the millisecond first, so
            // a moment in the last half millisecond of a second would be written as the next second.
            let retryAt = Date(timeIntervalSince1970: (point.now.timeIntervalSince1970 + 30).rounded(.down))
            server.script("/dated", [.retryAfter(formatter.string(from: retryAt))])
            let dated = try await point.enqueue(post(server.url("/dated")))
            let first = await recorder.waitFor { $0.operationID == dated.id && $0.kind.isRetryScheduled }
            let delay = try #require(first.first?.kind.retryDate).timeIntervalSince(point.now)
            #expect(delay > 28 && delay <= 30)

            server.script("/bounded", [.retryAfter("3600", status: 429)])
            var call = HTTPCall(method: .post, url: server.url("/bounded"))
            call.maximumRetryAfter = .seconds(5)
            let bounded = try await point.enqueue(CallOperation.http(call))
            let second = await recorder.waitFor { $0.operationID == bounded.id && $0.kind.isRetryScheduled }
            #expect(second.first?.kind.retryDate?.timeIntervalSince(point.now) == 5)
        }
    }

    @Test("A 5xx is retried until the policy gives up; the failure names the status")
    func serverErrorsRetryUntilThePolicyGivesUp() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/flaky", .status(500))
        let policy = RetryPolicy(maximumAttempts: 3, initialDelay: .seconds(1), jitter: .none)
        try await running { point, clock, recorder in
            let handle = try await point.enqueue(post(server.url("/flaky"), retry: policy))
            for attempt in 1...2 {
                _ = await recorder.waitFor(attempt) { $0.kind.isRetryScheduled }
                clock.advance(by: .seconds(2))
            }
            let error = await #expect(throws: RelayError.self) { _ = try await handle.value }
            #expect(error?.message.contains("500") == true)
        }
        #expect(server.requests.count == 3)
    }

    @Test("A per-attempt timeout of 300 ms runs on the injected clock, below URLSession's whole seconds")
    func timeoutOnTheClock() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/slow", .stall)
        try await running { point, clock, _ in
            let handle = try await point.enqueue(
                post(server.url("/slow"), timeout: .milliseconds(300), retry: .never))
            await server.waitForRequests(1)
            clock.advance(by: .milliseconds(299))
            #expect(try await point.status(of: handle.id)?.state == .running(attempt: 1))
            clock.advance(by: .milliseconds(1))
            let error = await #expect(throws: RelayError.self) { _ = try await handle.value }
            #expect(error?.message.contains("timed out after 0.3 seconds") == true)
            server.releaseStalled()
        }
    }

    @Test("A per-attempt timeout on the system clock, kept by the pipeline's timer loop, ends a stalled request")
    func timeoutOnTheSystemClock() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/slow", .stall)
        try await DataPoint.with(storage: .volatile, configuration: .testing) { point in
            let handle = try await point.enqueue(
                post(server.url("/slow"), timeout: .milliseconds(300), retry: .never))
            let error = await #expect(throws: RelayError.self) { _ = try await handle.value }
            #expect(error?.message.contains("timed out after 0.3 seconds") == true)
            server.releaseStalled()
        }
    }

    @Test("S11: cancelling an operation cancels its request in flight")
    func cancelInFlight() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/slow", .stall)
        try await running { point, _, _ in
            let handle = try await point.enqueue(post(server.url("/slow")))
            await server.waitForRequests(1)
            #expect(try await point.cancel(handle.id))
            #expect(try await handle.outcome == .cancelled(.requested))
            server.releaseStalled()
        }
    }

    @Test("S9: a host that is down takes its calls offline without using attempts; a probe ends it, all complete once")
    func offlineThenOnline() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.setDefault("/orders", .status(201))
        server.stop()
        let operations = try (0..<3).map { _ in try post(server.url("/orders")) }
        try await running { point, clock, recorder in
            let handles = try await point.enqueue(operations)
            let offline = await recorder.waitFor { $0.kind.isOffline && $0.sequenceName == .data }
            #expect(offline.first.map { "\($0.kind)" }?.contains("cannot connect") == true)
            try server.restart()
            clock.advance(by: .milliseconds(250))
            for handle in handles { #expect(try await handle.response.status == 201) }
            #expect(recorder.events.contains { $0.kind.isOnline && $0.sequenceName == .data })
            for operation in operations { #expect(try await point.status(of: operation.id)?.attempts == 1) }
        }
        let keys = server.requests(to: "/orders").compactMap(\.idempotencyKey)
        // Exactly once as the server sees it: one request per operation, under its own key.
        #expect(keys.sorted() == operations.map(\.idempotencyKey).sorted())
    }
}

extension HTTPRetryTests {
    @Test("S16: an attempt given back while the host was down stays given back after a crash and reopen")
    func givenBackAttemptSurvivesACrash() async throws {
        let server = try LoopbackServer()
        server.stop()
        let operation = try post(server.url("/orders"))
        try await withTemporaryFolder { folder in
            let reopened = try await DataPoint.crashAndReopen(at: folder.url, clock: ManualClock()) { point in
                let recorder = EventRecorder(point)
                try await point.enqueue(operation)
                _ = await recorder.waitFor { $0.kind.isOffline }
            }
            let status = try #require(try await reopened.status(of: operation.id))
            #expect(status.attempts == 0)
            #expect(reopened.recoveryReport?.interruptedOperations == 0)
            try await reopened.shutdown()
        }
    }
}

extension HTTPRetryTests {
    @Test("S16: an HTTP call interrupted by a crash is sent again after the reopen, under the same Idempotency-Key")
    func idempotencyKeyAcrossACrash() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/orders", [.stall])
        server.setDefault("/orders", .status(201))
        let operation = try post(server.url("/orders"))
        try await withTemporaryFolder { folder in
            let reopened = try await DataPoint.crashAndReopen(at: folder.url, clock: ManualClock()) { point in
                try await point.enqueue(operation)
                await server.waitForRequests(1)
            }
            server.releaseStalled()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await reopened.run() }
                #expect(try await reopened.handle(for: operation.id).response.status == 201)
                #expect(try await reopened.status(of: operation.id)?.attempts == 2)
                try await reopened.shutdown()
                try await group.waitForAll()
            }
        }
        #expect(server.idempotencyKeys == [operation.idempotencyKey, operation.idempotencyKey])
    }

    @Test("S12: one deadline covers an attempt and every redirect it follows")
    func timeoutCoversRedirects() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        // Three hops of a quarter second each: every hop fits the half-second timeout, the three together do not.
        server.setDefault(
            "/first", LoopbackServer.Reply.redirect(to: server.url("/second")).delayed(by: .milliseconds(250)))
        server.setDefault(
            "/second", LoopbackServer.Reply.redirect(to: server.url("/third")).delayed(by: .milliseconds(250)))
        server.setDefault("/third", LoopbackServer.Reply.status(200).delayed(by: .milliseconds(250)))
        try await DataPoint.with(storage: .volatile, configuration: testConfiguration) { point in
            let call = HTTPCall(url: server.url("/first"), timeout: .milliseconds(500))
            let operation = try CallOperation.http(call, retryPolicy: RetryPolicy(maximumAttempts: 1))
            guard case .failed(let failure) = try await point.enqueue(operation).outcome else {
                Issue.record("expected the attempt to time out")
                return
            }
            #expect(failure.reason.contains("timed out"))
        }
    }

    @Test("S8: execute of an HTTP call takes its retry policy: one attempt fails at the first 503")
    func executeTakesARetryPolicy() async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        server.script("/once", [.status(503), .json(#"{"ok":true}"#)])
        try await running { point, _, _ in
            let error = await #expect(throws: RelayError.self) {
                try await point.execute(HTTPCall(url: server.url("/once")), retryPolicy: .never)
            }
            #expect(error?.code == .operationFailed)
        }
        #expect(server.requests(to: "/once").count == 1, "one attempt, no retry")
    }
}
