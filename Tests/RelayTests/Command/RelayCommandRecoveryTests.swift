import Foundation
import Relay
import RelayTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a `relay` process killed mid-run leaves, and what the next command that opens the store does with it:
/// partial downloads, and a journal whose last frame was damaged afterwards.
extension RelayCommandTests {
    @Suite("recovers after a kill")
    struct Recovery {
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

        @Test("S17: a damaged last frame is damage, not a torn tail: relay says so in words when it opens the store")
        func damagedLastFrameIsReported() async throws {
            let server = try LoopbackServer()
            defer { server.stop() }
            try await withTemporaryFolder { folder in
                let plan = try slowThenNextPlan(server, in: folder)
                let runner = try CommandProcess(["run", plan, "--store", "s", "--json"], in: folder.url)
                await server.waitForRequests(1)
                runner.send(SIGKILL)
                _ = await runner.exit()

                let journal = folder.url.appendingPathComponent("s/journal")
                var bytes = try Data(contentsOf: journal)
                let frames = frameOffsets(in: bytes)
                #expect(endsInZeros(bytes, after: frames.end))
                bytes[frames.last + 13] ^= 0x01
                try bytes.write(to: journal)

                let cancel = try await CommandProcess.run(["cancel", "next", "--store", "s"], in: folder.url)
                #expect(cancel.err.contains("was recovered"), "\(cancel.err)")
                #expect(cancel.err.contains("was damaged (all"), "\(cancel.err)")
                #expect(cancel.err.contains("at byte \(frames.last)"), "\(cancel.err)")
            }
        }
    }
}
