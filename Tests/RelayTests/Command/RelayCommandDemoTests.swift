import Foundation
import Relay
import RelayTesting
import Testing

/// `relay demo`: what it runs, and the only folders it empties.
extension RelayCommandTests {
    @Suite("runs the demo")
    struct Demo {
        @Test("relay demo: real HTTP with a Retry-After, an offline period and recovery, every call completed")
        func demo() async throws {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                let run = try await CommandProcess.run(["demo", "--json", "--store", "demo"], in: folder.url)
                #expect(run.status == 0, "\(run.err)")
                let events = objects(run.out)
                let kinds = Set(events.compactMap { $0["event"] as? String })
                #expect(
                    kinds.isSuperset(of: ["started", "retryScheduled", "offline", "online", "completed", "summary"]))
                #expect(events.last?["completed"] as? Int == 15)
                #expect(events.contains { ($0["reason"] as? String)?.contains("503") == true })

                let store = folder.url.appendingPathComponent("demo")
                let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
                #expect(mode == 0o700)
                let again = try await CommandProcess.run(["demo", "--json", "--store", "demo"], in: folder.url)
                #expect(again.status == 0, "a demo store is emptied and run again: \(again.err)")
                #expect(objects(again.out).last?["completed"] as? Int == 15)

                // A demo store made before the marker existed is recognised by its files and its one plan.
                let marker = store.appendingPathComponent("relay-demo")
                try FileManager.default.removeItem(at: marker)
                let earlier = try await CommandProcess.run(["demo", "--json", "--store", "demo"], in: folder.url)
                #expect(earlier.status == 0, "\(earlier.err)")
                #expect(FileManager.default.fileExists(atPath: marker.path))
            }
        }

        @Test(
            "relay demo refuses a folder that is not a demo store, the current one included, and changes nothing",
            arguments: ["mystore", "."])
        func refusesForeignFolder(store: String) async throws {
            try await withTemporaryFolder { folder in
                let target = folder.url.appendingPathComponent(store == "." ? "project" : store)
                try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
                let file = target.appendingPathComponent("notes.txt")
                try Data("mine".utf8).write(to: file)
                let cwd = store == "." ? target : folder.url
                let run = try await CommandProcess.run(["demo", "--json", "--store", store], in: cwd)
                #expect(run.status == 3)
                #expect(run.err.contains("is not a demo store"), "\(run.err)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: target.path) == ["notes.txt"])
                #expect(try Data(contentsOf: file) == Data("mine".utf8))
            }
        }

        @Test("relay demo refuses the store of a running relay run, which goes on and completes")
        func refusesHeldRunStore() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            try await withTemporaryFolder { folder in
                let plan = try slowThenNextPlan(server, in: folder, name: "held")
                let runner = try CommandProcess(["run", plan, "--store", "s", "--json"], in: folder.url)
                await server.waitForRequests(1)
                let store = folder.url.appendingPathComponent("s").path
                let before = try FileManager.default.contentsOfDirectory(atPath: store)

                let demo = try await CommandProcess.run(["demo", "--json", "--store", "s"], in: folder.url)
                #expect(demo.status == 3)
                #expect(demo.err.contains("is not a demo store"), "\(demo.err)")
                let after = try FileManager.default.contentsOfDirectory(atPath: store)
                #expect(Set(after) == Set(before))

                server.releaseStalled()
                #expect(await runner.exit() == 0)
                let status = try await CommandProcess.run(["status", "--store", "s", "--json"], in: folder.url)
                #expect(status.out.joined().contains("held"), "the plan's record is still in the store")
            }
        }

        @Test("relay demo refuses a demo store that another relay demo holds, and a demo store with foreign files")
        func refusesHeldDemoStore() async throws {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                let first = try CommandProcess(["demo", "--json", "--store", "d"], in: folder.url)
                await first.waitForOutput(containing: #""started""#)
                let second = try await CommandProcess.run(["demo", "--json", "--store", "d"], in: folder.url)
                #expect(second.status == 3)
                #expect(second.err.contains("held by a running relay process"), "\(second.err)")
                #expect(await first.exit() == 0, "the first demo is untouched: \(first.err)")

                let store = folder.url.appendingPathComponent("d")
                try Data("mine".utf8).write(to: store.appendingPathComponent("notes.txt"))
                let third = try await CommandProcess.run(["demo", "--json", "--store", "d"], in: folder.url)
                #expect(third.status == 3)
                #expect(third.err.contains("notes.txt"), "\(third.err)")
                #expect(FileManager.default.fileExists(atPath: store.appendingPathComponent("journal").path))
            }
        }

        @Test("relay demo refuses a --store that names a file")
        func refusesFile() async throws {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                try Data("mine".utf8).write(to: folder.url.appendingPathComponent("file"))
                let run = try await CommandProcess.run(["demo", "--store", "file"], in: folder.url)
                #expect(run.status == 3)
                #expect(run.err.contains("is a file, not a folder"), "\(run.err)")
                #expect(try Data(contentsOf: folder.url.appendingPathComponent("file")) == Data("mine".utf8))
            }
        }
    }
}
