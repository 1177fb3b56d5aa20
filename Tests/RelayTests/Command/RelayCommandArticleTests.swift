import Foundation
import RelayTesting
import Testing

extension RelayCommandTests {
    @Suite("runs the relay Command article's plan")
    struct Article {
        @Test("relay: the article's plan runs as written, against a loopback server in place of api.example.com")
        func articlePlan() async throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().deletingLastPathComponent()
            let article = try String(
                contentsOf: root.appendingPathComponent("Docs.docc/RelayCommand.md"), encoding: .utf8)
            let json = try #require(
                article.components(separatedBy: "```json\n").dropFirst().first?
                    .components(separatedBy: "```").first)
            let server = try LoopbackServer()
            defer { server.stop() }
            server.setDefault("/catalog", .json("[]"))
            server.setDefault("/orders", .json(#"{"id": 1}"#, status: 201))
            server.setDefault("/report.pdf", .zeros(count: 1000))
            try await withTemporaryFolder { folder in
                let plan = try writePlan(
                    json.replacingOccurrences(of: "https://api.example.com", with: server.baseURL.absoluteString),
                    in: folder, named: "nightly-sync.json")
                let run = try await CommandProcess.run(
                    ["run", plan, "--store", ".relay"], in: folder.url, environment: ["SHOP_TOKEN": "t0k"])
                #expect(run.status == 0, "\(run.err)")
                #expect(server.requests.map(\.path) == ["/catalog", "/orders", "/report.pdf"])
                #expect(server.requests(to: "/orders").first?.header("Authorization") == "Bearer t0k")
                #expect(
                    FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("out/report.pdf").path))
                let status = try await CommandProcess.run(["status", "--store", ".relay"], in: folder.url)
                #expect(status.out.contains { $0.hasPrefix("Plan nightly-sync") && $0.contains("3 completed") })
            }
        }
    }
}
