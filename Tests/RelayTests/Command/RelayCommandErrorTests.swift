import Foundation
import Relay
import RelayTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How `relay` ends when it cannot do what it was asked: its exit statuses, and messages a person or a script reads.
extension RelayCommandTests {
    @Suite("says what went wrong")
    struct Errors {
        @Test("relay: a --store that names a file exits 3 with a sentence; with --json the error is a JSON line too")
        func storeErrors() async throws {
            try await withTemporaryFolder { folder in
                let plan = try writePlan(#"{"calls": [{"name": "a", "url": "http://127.0.0.1:9/"}]}"#, in: folder)
                try Data("x".utf8).write(to: folder.url.appendingPathComponent("file"))
                let run = try await CommandProcess.run(["run", plan, "--store", "file", "--json"], in: folder.url)
                #expect(run.status == 3)
                #expect(run.err.hasPrefix("relay: the store cannot be used: "), "\(run.err)")
                #expect(!run.err.contains("RelayError"), "\(run.err)")
                let error = try #require(objects(run.out).last)
                #expect(error["event"] as? String == "error")
                #expect(error["code"] as? String == "storageFailure")
                #expect(error["exitStatus"] as? Int == 3)

                let status = try await CommandProcess.run(["status", "--store", "nowhere"], in: folder.url)
                #expect(status.status == 3)
                #expect(status.err.contains("no store at"), "\(status.err)")
            }
        }

        @Test("relay: malformed JSON names its line and column; a plan path that is a folder says so; --version")
        func planFileErrors() async throws {
            try await withTemporaryFolder { folder in
                let plan = try writePlan("{\n  \"calls\": [\n   }\n", in: folder)
                let run = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(run.status == 2)
                #expect(run.err.contains("at line 3, column 4"), "\(run.err)")

                let folderPlan = try await CommandProcess.run(["run", folder.url.path, "--store", "s"], in: folder.url)
                #expect(folderPlan.status == 2)
                #expect(folderPlan.err.contains("is a folder"), "\(folderPlan.err)")

                let version = try await CommandProcess.run(["--version"], in: folder.url)
                #expect(version.status == 0)
                #expect(version.out.first?.hasPrefix("relay ") == true)
            }
        }

        @Test("relay run: a second Ctrl-C stops at once, and the same command resumes")
        func secondInterrupt() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            try await withTemporaryFolder { folder in
                let plan = try slowThenNextPlan(server, in: folder)
                let child = try CommandProcess(["run", plan, "--store", "s", "--json"], in: folder.url)
                await server.waitForRequests(1)
                child.send(SIGINT)
                await child.waitForOutput(containing: #""stopping""#)
                child.send(SIGINT)
                #expect(await child.exit() == 130)
                #expect(objects(child.out).contains { $0["event"] as? String == "stopped" })

                // The call cut short is sent again, and answered at once this time.
                server.setDefault("/slow", .json("{}"))
                server.releaseStalled()
                let resumed = try await CommandProcess.run(["run", plan, "--store", "s"], in: folder.url)
                #expect(resumed.status == 0, "\(resumed.err)")
                #expect(server.requests(to: "/slow").count == 2)
            }
        }
    }
}
