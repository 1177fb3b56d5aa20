import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S16 crash recovery with SIGKILL", .serialized, .timeLimit(.minutes(5)))
struct CrashRecoveryTests {
    /// Executes like the worker's executor, so that recovered operations run to completion here.
    struct YieldingWork: CallExecutor {
        func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
            for _ in 0..<Int(operation.payload.first ?? 1) { await Task.yield() }
            return .completed(operation.payload)
        }
    }

    @Test(
        "S16: after SIGKILL at a random point, every acknowledged enqueue is there, runs once more at most, and finishes",
        arguments: 0..<50
    )
    func killAndRecover(seed: Int) async throws {
        try await withTemporaryFolder { folder in
            let commitsBeforeKill = 1 + (seed * 7) % 25
            let arguments = ["run", folder.url.path, String(seed + 1)]
            let worker = try ChildProcess(product: "RelayCrashWorker", arguments: arguments)
            let lines = await worker.readLines { $0.count >= commitsBeforeKill }
            await worker.kill()
            let acknowledged = lines.filter { $0.hasPrefix("ack ") }.flatMap {
                $0.dropFirst(4).split(separator: " ").compactMap { UUID(uuidString: String($0)) }
            }
            // One read may bring several lines, so more than asked for is fine; fewer means the worker died by itself.
            #expect(lines.count >= commitsBeforeKill, "the worker stopped early")

            let inspected = try FileStorage.inspect(at: folder.url)
            #expect(inspected.duplicateTerminals == 0, "a terminal state was recorded twice")

            let point = try await DataPoint(storage: .file(at: folder.url))
            point.register(YieldingWork(), for: "work")
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            for id in acknowledged {
                #expect(try await point.status(of: id) != nil, "acknowledged operation \(id) was lost")
            }
            let report = try #require(point.recoveryReport)
            let stored = inspected.state.operations.map(\.operation.id)
            try await run(point, until: stored)
            var rerun = 0
            for id in stored {
                let status = try #require(try await point.status(of: id))
                #expect(status.state == .finished(.completed(status.state.payload)), "\(id) did not complete")
                #expect(status.attempts >= 1)
                if status.attempts >= 2 { rerun += 1 }
            }
            // Each operation that was running at the kill counted that attempt and ran again.
            #expect(rerun == report.interruptedOperations)
        }
    }

    @Test("S16: a second process cannot open a folder another process holds, and can once that one is killed")
    func twoProcesses() async throws {
        try await withTemporaryFolder { folder in
            let holder = try ChildProcess(product: "RelayCrashWorker", arguments: ["hold", folder.url.path])
            let lines = await holder.readLines { $0.contains("holding") }
            #expect(lines.contains("holding"))
            let refused = await #expect(throws: RelayError.self) {
                _ = try await DataPoint(storage: .file(at: folder.url))
            }
            #expect(refused?.code == .storeLocked)
            await holder.kill()
            let point = try await DataPoint(storage: .file(at: folder.url))
            try await point.shutdown()
        }
    }

    @Test("S16: a worker whose input closes exits by itself, so that none outlives the test that started it")
    func workerEndsWithItsInput() async throws {
        try await withTemporaryFolder { folder in
            let worker = try ChildProcess(product: "RelayCrashWorker", arguments: ["run", folder.url.path, "1"])
            #expect(await worker.readLines { !$0.isEmpty }.first?.hasPrefix("ack ") == true)
            // Without the worker's watch of its input, this waits until the suite's time limit fails the test.
            #expect(await worker.closeInput() == 0)
        }
    }

    @Test("S17: a process that shuts its DataPoint down lets another process open the folder")
    func gracefulHandOver() async throws {
        try await withTemporaryFolder { folder in
            let holder = try ChildProcess(product: "RelayCrashWorker", arguments: ["hold", folder.url.path])
            #expect(await holder.readLines { $0.contains("holding") }.contains("holding"))
            // Its input closed, the holder shuts down and exits on its own.
            #expect(await holder.closeInput() == 0)
            let point = try await DataPoint(storage: .file(at: folder.url))
            try await point.shutdown()
        }
    }
}

extension CallStatus.State {
    /// The payload of a completed operation, for comparing with what the worker's executor returns.
    fileprivate var payload: Data {
        if case .finished(.completed(let data)) = self { return data }
        return Data()
    }
}
