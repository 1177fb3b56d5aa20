import Foundation
import Relay
import RelayTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The relay command's other subcommands: reading a store, held or not, changing one, and help.
extension RelayCommandTests {
    @Suite("reads and changes stores")
    struct Store {
        @Test("relay status, list, show and events read a store that a running relay holds; cancel says what to do")
        func heldStore() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            try await withTemporaryFolder { folder in
                let plan = try slowThenNextPlan(server, in: folder, name: "held")
                let runner = try CommandProcess(["run", plan, "--store", "s", "--json"], in: folder.url)
                await server.waitForRequests(1)

                let status = try await CommandProcess.run(["status", "--store", "s"], in: folder.url)
                #expect(status.status == 0, "\(status.err)")
                #expect(status.out.first?.contains("a relay process is running on it") == true)
                #expect(status.out.contains { $0.hasPrefix("Plan held") && $0.contains("2 calls") })
                let list = try await CommandProcess.run(["list", "--store", "s", "--json"], in: folder.url)
                #expect(objects(list.out).compactMap { $0["call"] as? String } == ["slow", "next"])
                let show = try await CommandProcess.run(["show", "next", "--store", "s"], in: folder.url)
                #expect(show.out.contains { $0.contains("depends on  slow") })

                let second = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(second.status == 3, "a held store is a store error")
                #expect(second.err.contains("held by another relay process"))

                let cancel = try await CommandProcess.run(["cancel", "next", "--store", "s"], in: folder.url)
                #expect(cancel.status == 3)
                #expect(cancel.err.contains("held by a running relay process"))
                #expect(cancel.err.contains("Ctrl-C"))

                let follower = try CommandProcess(["events", "--follow", "--store", "s"], in: folder.url)
                await follower.waitForOutput(containing: #""following""#)
                server.releaseStalled()
                #expect(await runner.exit() == 0)
                #expect(await follower.exit() == 0)
                let followed = objects(follower.out)
                #expect(followed.contains { $0["event"] as? String == "completed" && $0["call"] as? String == "next" })

                let history = try await CommandProcess.run(["events", "--store", "s"], in: folder.url)
                #expect(objects(history.out).filter { $0["event"] as? String == "completed" }.count == 2)
                let after = try await CommandProcess.run(["events", "--follow", "--store", "s"], in: folder.url)
                #expect(after.status == 1)
                #expect(after.err.contains("no relay process is running"))
            }
        }

        @Test(
            "S3: relay replay sends a failed call of a declared sequence again with its idempotency key; the plan completes"
        )
        func replayFailedCall() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.script("/charge", [.status(402, "no funds")])
            server.setDefault("/charge", .json(#"{"paid": true}"#))
            try await withTemporaryFolder { folder in
                // The plan declares its sequence: a replay opens the store, where the sequence is registered still.
                let plan = try writePlan(
                    #"""
                    {"sequences": [{"name": "payments", "bunchSize": 2}],
                     "calls": [{"name": "charge", "method": "POST", "url": "\#(server.url("/charge"))", "sequence": "payments"}]}
                    """#, in: folder)
                let failed = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(failed.status == 1)
                let show = try await CommandProcess.run(["show", "charge", "--store", "s"], in: folder.url)
                #expect(show.out.contains { $0.contains("response    HTTP 402") })
                #expect(show.out.contains { $0.contains("body        no funds") }, "a failed call's body is shown")
                let shown = try #require(
                    objects(
                        try await CommandProcess.run(["show", "charge", "--store", "s", "--json"], in: folder.url).out
                    )
                    .first)
                #expect(shown["responseBody"] as? String == "no funds")
                #expect(shown["responseStatus"] as? Int == 402)
                #expect((shown["idempotencyKey"] as? String)?.isEmpty == false)
                #expect(shown["id"] as? String == (shown["id"] as? String)?.lowercased())

                let replay = try await CommandProcess.run(["replay", "charge", "--store", "s"], in: folder.url)
                #expect(replay.status == 0, "\(replay.err)")
                let resumed = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(resumed.status == 0, "\(resumed.err)")
                let keys = server.requests(to: "/charge").map(\.idempotencyKey)
                #expect(keys.count == 2)
                #expect(keys[0] != nil && keys[0] == keys[1])

                let body = try await CommandProcess.run(["show", "charge", "--store", "s", "--body"], in: folder.url)
                #expect(body.out.joined() == #"{"paid": true}"#, "the completed replay's body")
                let status = try #require(
                    objects(try await CommandProcess.run(["status", "--store", "s", "--json"], in: folder.url).out)
                        .first)
                let plans = status["plans"] as? [[String: Any]]
                #expect((plans?.first?["states"] as? [String: Int]) == ["completed": 1])
                #expect(
                    (status["sequences"] as? [String: [String: Int]])?["payments"] == ["failed": 1, "completed": 1])

                let list = try await CommandProcess.run(["list", "--store", "s", "--json"], in: folder.url)
                #expect(objects(list.out).compactMap { $0["state"] as? String } == ["failed", "completed"])
                let again = try await CommandProcess.run(["replay", "charge", "--store", "s"], in: folder.url)
                #expect(again.status == 1)
                #expect(again.err.contains("only failed or cancelled ones replay"))
            }
        }

        @Test("relay cancel ends a pending call of a store that no process holds, and its dependents with it")
        func cancelPendingCall() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/first", .stall)
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    """
                    {"calls": [{"name": "first", "url": "\(server.url("/first"))"},
                      {"name": "second", "url": "\(server.url("/second"))", "dependsOn": ["first"]},
                      {"name": "third", "url": "\(server.url("/third"))", "dependsOn": ["second"]}]}
                    """, in: folder)
                let runner = try CommandProcess(["run", plan, "--store", "s"], in: folder.url)
                await server.waitForRequests(1)
                runner.send(SIGKILL)
                _ = await runner.exit()

                let cancel = try await CommandProcess.run(["cancel", "second", "--store", "s"], in: folder.url)
                #expect(cancel.status == 0, "\(cancel.err)")
                let list = try await CommandProcess.run(
                    ["list", "--store", "s", "--state", "cancelled"], in: folder.url)
                #expect(list.out.count == 2)
                let data = try await CommandProcess.run(["list", "--sequence", "data", "--store", "s"], in: folder.url)
                #expect(data.out.count == 3)
                let none = try await CommandProcess.run(
                    ["list", "--sequence", "uploads", "--store", "s"], in: folder.url)
                #expect(none.out.isEmpty)
                #expect(server.requests(to: "/second").isEmpty)
                let unknown = try await CommandProcess.run(["cancel", "nothing", "--store", "s"], in: folder.url)
                #expect(unknown.status == 2)
            }
        }

        @Test("relay: --help prints a command's usage; an unknown command or option exits 2")
        func help() async throws {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                let help = try await CommandProcess.run(["list", "--help"], in: folder.url)
                #expect(help.status == 0)
                #expect(help.out.contains { $0.hasPrefix("Usage: relay list") })
                let unknown = try await CommandProcess.run(["launch"], in: folder.url)
                #expect(unknown.status == 2)
                #expect(unknown.err.contains("there is no command launch"))
                let option = try await CommandProcess.run(["status", "--stor", "x"], in: folder.url)
                #expect(option.status == 2)
                #expect(option.err.contains("no option --stor"))
            }
        }

        @Test("relay: a database's URL for --store runs relay-postgres beside relay, or says how to build it")
        func databaseStore() async throws {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                // This package builds no relay-postgres: the Integrations package does.
                let status = try await CommandProcess.run(
                    ["status", "--store", "postgres://relay@127.0.0.1:9/relay"], in: folder.url)
                #expect(status.status == 2)
                #expect(status.err.contains("relay-postgres"), "\(status.err)")
                #expect(status.err.contains("swift run --package-path Integrations relay-postgres"))
                let unknown = try await CommandProcess.run(["list", "--store", "redis://127.0.0.1:9"], in: folder.url)
                #expect(unknown.status == 2)
                #expect(unknown.err.contains("relay-redis"))
                #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent(".relay").path))
            }
        }

        @Test("S9: relay status shows a destination a running plan finds offline, and nothing once the run ends")
        func statusShowsOfflineDestinations() async throws {
            let closed = try LoopbackServer()
            let url = closed.url("/down")
            closed.stop()
            try await withTemporaryFolder { folder in
                let plan = try writePlan(#"{"calls": [{"name": "down", "url": "\#(url)"}]}"#, in: folder)
                let runner = try CommandProcess(["run", plan, "--store", "s", "--json"], in: folder.url)
                await runner.waitForOutput(containing: #""event":"offline""#)

                let status = try await CommandProcess.run(["status", "--store", "s"], in: folder.url)
                #expect(status.out.contains { $0.hasPrefix("Offline: http://127.0.0.1:") && $0.contains(" since ") })
                let json = try await CommandProcess.run(["status", "--store", "s", "--json"], in: folder.url)
                let offline = objects(json.out).first?["offline"] as? [[String: Any]]
                #expect((offline?.first?["destination"] as? String)?.hasPrefix("http://127.0.0.1:") == true)
                #expect(offline?.first?["since"] is String)

                runner.send(SIGINT)
                #expect(await runner.exit() == 130)
                let after = try await CommandProcess.run(["status", "--store", "s"], in: folder.url)
                #expect(!after.out.contains { $0.hasPrefix("Offline:") })
                let file = folder.url.appendingPathComponent("s").appendingPathComponent("offline.json")
                #expect(!FileManager.default.fileExists(atPath: file.path))
            }
        }

        @Test("S9: relay show counts a send that got no answer beside the attempts, which it did not spend")
        func showCountsUnansweredSends() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.script("/orders", [.dropConnection])
            server.setDefault("/orders", .status(201))
            try await withTemporaryFolder { folder in
                let url = server.url("/orders")
                let plan = try writePlan(
                    #"{"calls": [{"name": "order", "method": "POST", "url": "\#(url)"}]}"#, in: folder)
                let run = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(run.status == 0, "\(run.err)")
                #expect(server.requests(to: "/orders").count == 2)

                let show = try await CommandProcess.run(["show", "order", "--store", "s"], in: folder.url)
                #expect(show.out.contains { $0.hasPrefix("  attempts    1 of") })
                #expect(show.out.contains { $0.contains("sent        2 times: 1 got no answer") })
                let json = try await CommandProcess.run(["show", "order", "--store", "s", "--json"], in: folder.url)
                let object = objects(json.out).first
                #expect(object?["attempts"] as? Int == 1)
                #expect(object?["sends"] as? Int == 2)
            }
        }
    }
}
