import Foundation
import Relay
import RelayTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Downloads of a `relay` process killed mid-body: where their partial files live, and who removes them.
extension RelayCommandTests {
    @Suite("keeps downloads beside their destination")
    struct Downloads {
        @Test("S18: a killed download's partial file is beside its destination, 0600, and the next open removes it")
        func partialFileRemovedAtOpen() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/large", LoopbackServer.Reply.zeros(count: 1 << 20).heldUntilReleased())
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    #"{"calls": [{"name": "large", "url": "\#(server.url("/large"))", "download": "files/large.bin"}]}"#,
                    in: folder)
                let runner = try CommandProcess(["run", plan, "--store", "s", "--json"], in: folder.url)
                await server.waitForRequests(1)
                let files = folder.url.appendingPathComponent("files")
                let partial = files.appendingPathComponent(".large.bin.relay-partial")
                let mode = try FileManager.default.attributesOfItem(atPath: partial.path)[.posixPermissions]
                #expect(mode as? Int == 0o600, "the partial file is the owner's alone")
                runner.send(SIGKILL)
                _ = await runner.exit()
                #expect(FileManager.default.fileExists(atPath: partial.path))

                // Cancelling opens the store, which removes the partial file of the call that no longer runs.
                let cancel = try await CommandProcess.run(["cancel", "large", "--store", "s"], in: folder.url)
                #expect(cancel.status == 0, "\(cancel.err)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: files.path).isEmpty)
            }
        }
    }
}
