import Foundation
import Relay
import RelayTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a plan file into `folder` and returns its path.
func writePlan(_ json: String, in folder: TemporaryFolder, named name: String = "plan.json") throws -> String {
    try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
    let file = folder.url.appendingPathComponent(name)
    try Data(json.utf8).write(to: file)
    return file.path
}

/// A server whose `/slow` answers only when the test releases it, and a plan whose `next` call waits for `slow`.
func slowThenNextPlan(_ server: LoopbackServer, in folder: TemporaryFolder, name: String? = nil) throws -> String {
    server.setDefault("/slow", LoopbackServer.Reply.json("{}").heldUntilReleased())
    server.setDefault("/next", .json("{}"))
    let named = name.map { #""name": "\#($0)", "# } ?? ""
    return try writePlan(
        """
        {\(named)"calls": [{"name": "slow", "url": "\(server.url("/slow"))"},
          {"name": "next", "url": "\(server.url("/next"))", "dependsOn": ["slow"]}]}
        """, in: folder)
}

/// The JSON objects of a run's output lines.
func objects(_ lines: [String]) -> [[String: Any]] {
    lines.compactMap { line in try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] }
}

/// The built `relay` command, run as child processes one test at a time, so that the processes of one test never
/// compete with another's for the cores.
@Suite("The relay command", .serialized, .timeLimit(.minutes(3)))
struct RelayCommandTests {}

/// `relay run` as a user runs it: the built command as a child process, against real HTTP on 127.0.0.1.
extension RelayCommandTests {
    @Suite("runs plans")
    struct Run {
        @Test("relay run: a plan completes in dependency order; secret headers are sent and never stored")
        func planCompletes() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/catalog", .json(#"{"items": 2}"#))
            server.setDefault("/orders", .json(#"{"order": 7}"#, status: 201))
            server.setDefault("/receipt", .zeros(count: 4096))
            server.setDefault("/attachments", .status(201))
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    """
                    {"name": "shop", "sequences": [{"name": "api", "bunchSize": 2}], "calls": [
                      {"name": "catalog", "url": "\(server.url("/catalog"))", "sequence": "api"},
                      {"name": "order", "method": "POST", "url": "\(server.url("/orders"))", "body": "{\\"sku\\": 7}",
                       "headers": {"Content-Type": "application/json"},
                       "secretHeaders": {"Authorization": "Bearer ${SHOP_TOKEN}"}, "dependsOn": ["catalog"]},
                      {"name": "receipt", "url": "\(server.url("/receipt"))", "download": "out/receipt.bin",
                       "dependsOn": ["order"]},
                      {"name": "attach", "method": "PUT", "url": "\(server.url("/attachments"))",
                       "bodyFile": "attachment.txt", "dependsOn": ["receipt"]}
                    ]}
                    """, in: folder)
                try Data("attached".utf8).write(to: folder.url.appendingPathComponent("attachment.txt"))
                let store = folder.url.appendingPathComponent("store")
                let run = try await CommandProcess.run(
                    ["run", plan, "--store", store.path], in: folder.url, environment: ["SHOP_TOKEN": "tok-51ec2e7"])
                #expect(run.status == 0, "\(run.err)")
                let paths = server.requests.map(\.path)
                #expect(paths == ["/catalog", "/orders", "/receipt", "/attachments"])
                #expect(server.requests(to: "/attachments").first?.body == Data("attached".utf8))
                #expect(server.requests(to: "/orders").first?.header("Authorization") == "Bearer tok-51ec2e7")
                let summary = try #require(objects(run.out).last)
                #expect(summary["event"] as? String == "summary")
                #expect(summary["completed"] as? Int == 4)
                let receipt = try Data(contentsOf: folder.url.appendingPathComponent("out/receipt.bin"))
                #expect(receipt.count == 4096)
                for file in try FileManager.default.contentsOfDirectory(atPath: store.path) {
                    let bytes = (try? Data(contentsOf: store.appendingPathComponent(file))) ?? Data()
                    #expect(bytes.range(of: Data("tok-51ec2e7".utf8)) == nil, "the secret was written to \(file)")
                }
            }
        }

        @Test("relay run: a failed call exits 1 and names it; its dependents are cancelled")
        func failedCallExitsOne() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/charge", .status(402, "no funds"))
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    """
                    {"calls": [{"name": "charge", "method": "POST", "url": "\(server.url("/charge"))"},
                               {"name": "ship", "method": "POST", "url": "\(server.url("/ship"))", "dependsOn": ["charge"]}]}
                    """, in: folder)
                let run = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(run.status == 1)
                let events = objects(run.out)
                #expect(events.contains { $0["event"] as? String == "failed" && $0["call"] as? String == "charge" })
                #expect(events.contains { $0["event"] as? String == "cancelled" && $0["call"] as? String == "ship" })
                #expect(server.requests(to: "/ship").isEmpty)
                #expect(events.last?["failed"] as? Int == 1)

                // The same plan changed is refused on this store, which ran the plan as it was.
                let changed = try writePlan(
                    #"{"calls": [{"name": "charge", "method": "PUT", "url": "\#(server.url("/charge"))"}]}"#, in: folder
                )
                let refused = try await CommandProcess.run(["run", changed, "--store", "s"], in: folder.url)
                #expect(refused.status == 2)
                #expect(refused.err.contains("already ran a different plan named \"plan\""), "\(refused.err)")
                #expect(server.requests(to: "/charge").count == 1)
            }
        }

        @Test("relay run: a completed plan runs again without its secret variables; a new one needs them")
        func rerunWithoutSecrets() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/orders", .status(201))
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    #"""
                    {"calls": [{"name": "order", "method": "POST", "url": "\#(server.url("/orders"))",
                      "secretHeaders": {"Authorization": "Bearer ${RELAY_TEST_TOKEN}"}}]}
                    """#, in: folder)
                let missing = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(missing.status == 2)
                #expect(missing.err.contains("environment variable RELAY_TEST_TOKEN is not set"), "\(missing.err)")
                #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("s").path))

                let first = try await CommandProcess.run(
                    ["run", plan, "--store", "s"], in: folder.url, environment: ["RELAY_TEST_TOKEN": "t0k3n"])
                #expect(first.status == 0, "\(first.err)")
                let again = try await CommandProcess.run(["run", plan, "--store", "s", "--json"], in: folder.url)
                #expect(again.status == 0, "nothing will be sent, so no secret is needed: \(again.err)")
                #expect(objects(again.out).last?["finishedEarlier"] as? Int == 1)
                #expect(server.requests(to: "/orders").count == 1)
            }
        }

        @Test("S12: relay run gives up at the plan's deadline: unfinished calls are cancelled, and it exits 1")
        func planDeadline() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/slow", .stall)
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    #"{"deadline": 0.5, "calls": [{"name": "slow", "url": "\#(server.url("/slow"))"}]}"#, in: folder)
                let run = try await CommandProcess.run(["run", plan, "--store", "s", "--json"], in: folder.url)
                #expect(run.status == 1, "\(run.err)")
                let events = objects(run.out)
                #expect(events.contains { $0["event"] as? String == "deadline" && $0["cancelled"] as? Int == 1 })
                #expect(events.last?["cancelled"] as? Int == 1)

                let bad = try writePlan(#"{"deadline": -1, "calls": [{"url": "http://127.0.0.1:9/"}]}"#, in: folder)
                let refused = try await CommandProcess.run(["run", bad, "--store", "t"], in: folder.url)
                #expect(refused.status == 2)
                #expect(refused.err.contains("deadline: must be a positive number of seconds"), "\(refused.err)")
            }
        }

        @Test("relay run: a bad plan exits 2 with a message that names the field, and touches no store")
        func badPlan() async throws {
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    #"{"calls": [{"name": "a", "url": "http://127.0.0.1:9/x", "retries": 3}]}"#, in: folder)
                let run = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(run.status == 2)
                #expect(run.err.contains("plan.json: calls[0].retries: is not a field of calls[0]"), "\(run.err)")
                #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("s").path))
            }
        }

        @Test("relay run: after each of ten SIGKILLs mid-plan, running it again sends no call that had completed")
        func resumesAfterKills() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            let count = 96
            // Each request waits until the test releases it, so that each run gets exactly as far as the test lets it.
            for index in 0..<count {
                server.setDefault("/items/\(index)", LoopbackServer.Reply.json("{}").heldUntilReleased())
            }
            try await withTemporaryFolder { folder in
                let calls = (0..<count).map { index in
                    #"{"name": "item-\#(index)", "method": "POST", "url": "\#(server.url("/items/\(index)"))", "sequence": "work"}"#
                }
                let plan = try writePlan(
                    #"{"sequences": [{"name": "work", "bunchSize": 2}], "calls": [\#(calls.joined(separator: ","))]}"#,
                    in: folder)
                let store = folder.url.appendingPathComponent("store")
                var kills: [(requests: Int, completed: Set<String>)] = []
                for _ in 0..<10 {
                    var next = server.requests.count + 1
                    let child = try CommandProcess(["run", plan, "--store", store.path], in: folder.url)
                    for _ in 0..<3 {
                        await server.waitForRequests(next)
                        // Counted before the release, so that the next wait is for a request that has not come yet:
                        // with every request in flight held, none would.
                        next = server.requests.count + 1
                        server.releaseStalled()
                    }
                    await server.waitForRequests(next)
                    child.send(SIGKILL)
                    _ = await child.exit()
                    server.releaseStalled()
                    let completed = try FileStorage.read(at: store).operations.filter {
                        if case .completed = $0.result { return true } else { return false }
                    }
                    kills.append(
                        (
                            server.requests.count,
                            Set(completed.compactMap { $0.operation.persistentUserInfo["relay.call"] })
                        )
                    )
                }
                for index in 0..<count { server.setDefault("/items/\(index)", .json("{}")) }
                let last = try await CommandProcess.run(["run", plan, "--store", store.path], in: folder.url)
                #expect(last.status == 0, "\(last.err)")
                #expect(kills.count == 10)
                // Each run completed more before its kill, and none finished the plan.
                #expect(zip(kills, kills.dropFirst()).allSatisfy { $0.completed.isStrictSubset(of: $1.completed) })
                #expect(kills.last!.completed.count < count)
                let requests = server.requests
                for kill in kills {
                    for request in requests[kill.requests...] {
                        let name = "item-" + request.path.split(separator: "/").last!
                        #expect(!kill.completed.contains(name), "\(name) completed before a kill and was sent again")
                    }
                }
                #expect(Set(requests.map(\.path)).count == count)
                let state = try FileStorage.read(at: store)
                #expect(state.operations.count == count)
                #expect(state.operations.allSatisfy { if case .completed = $0.result { true } else { false } })
            }
        }

        @Test(
            "relay run: Ctrl-C lets running calls finish and stops; the summary counts them; the same command resumes")
        func interruptAndResume() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/slow", LoopbackServer.Reply.json("{}").heldUntilReleased())
            server.setDefault("/next", .json("{}"))
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    """
                    {"sequences": [{"name": "api", "bunchSize": 3}],
                     "calls": [{"name": "slow", "url": "\(server.url("/slow"))", "sequence": "api"},
                      {"name": "slow-2", "url": "\(server.url("/slow"))", "sequence": "api"},
                      {"name": "slow-3", "url": "\(server.url("/slow"))", "sequence": "api"},
                      {"name": "next", "url": "\(server.url("/next"))", "dependsOn": ["slow"]}]}
                    """, in: folder)
                let child = try CommandProcess(["run", plan, "--store", "s", "--json"], in: folder.url)
                await server.waitForRequests(3)
                child.send(SIGINT)
                await child.waitForOutput(containing: #""stopping""#)
                server.releaseStalled()
                #expect(await child.exit() == 130)
                #expect(server.requests(to: "/next").isEmpty)
                let summary = objects(child.out).last
                #expect(summary?["interrupted"] as? Bool == true)
                #expect(summary?["completed"] as? Int == 3, "the calls that finished in the grace period count")

                let resumed = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(resumed.status == 0, "\(resumed.err)")
                #expect(server.requests(to: "/slow").count == 3)
                #expect(server.requests(to: "/next").count == 1)
                #expect(objects(resumed.out).last?["finishedEarlier"] as? Int == 3)
            }
        }
    }
}
