import Foundation
import Relay
import RelayTesting

/// `relay demo`: a plan of HTTP calls against a server on 127.0.0.1 with scripted faults, run durably, so that a
/// newcomer sees progress, retries, an offline period and recovery on real HTTP in a few seconds.
struct Demo {
    var store: URL
    /// The store as the command line named it, for the lines that tell what to run next.
    var storeName: String
    var json: Bool

    /// The secret the demo's order call sends; the store keeps only the variable's name.
    static let tokenVariable = "RELAY_DEMO_TOKEN"

    func run() async throws -> ExitStatus {
        let server = try LoopbackServer()
        defer { server.stop() }
        script(server)
        try DemoStore(folder: store).prepare()
        let plan = Self.plan(base: server.baseURL, downloads: store.appendingPathComponent("downloads"))
        if !json {
            Output.line(
                """
                Relay demo: \(plan.calls.count) HTTP calls to a local server at \(server.baseURL.absoluteString), \
                which answers one with a 503 and Retry-After, drops one connection, answers one slowly, and goes \
                down for a second and a half midway.
                Store: \(storeName) (afterwards: relay status --store \(storeName))

                """)
        }
        let runner = PlanRunner(
            plan: plan, store: store, json: json, environment: [Self.tokenVariable: "demo-secret-token"])
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // The offline period: once ten requests have come in, the server goes down and comes back, so that the
            // calls in flight and those that start meanwhile find it unreachable.
            group.addTask {
                await server.waitForRequests(10)
                server.stop()
                try await ContinuousClock().sleep(for: .milliseconds(1500))
                try server.restart()
            }
            let status = try await runner.run()
            group.cancelAll()
            return status
        }
    }

    private func script(_ server: LoopbackServer) {
        server.setDefault("/catalog", .json(#"{"products": [1, 2, 3, 4, 5, 6, 7, 8]}"#))
        for product in 1...8 {
            server.setDefault("/products/\(product)", .json(#"{"id": \#(product), "stock": \#(product * 3)}"#))
        }
        server.script("/products/3", [.retryAfter("1")])
        server.script("/products/5", [.dropConnection])
        server.setDefault("/products/7", Reply.json(#"{"id": 7, "stock": 21}"#).delayed(by: .milliseconds(1200)))
        for image in 1...4 { server.setDefault("/images/\(image)", .zeros(count: 256 << 10)) }
        server.setDefault("/orders", .json(#"{"order": 1001}"#, status: 201))
        server.setDefault("/orders/1001/receipt", .json(#"{"total": "42.00"}"#))
    }

    typealias Reply = LoopbackServer.Reply

    static func plan(base: URL, downloads: URL) -> Plan {
        let retry = Plan.Retry(attempts: 6, initialDelay: 0.3, maximumDelay: 2)
        func call(
            _ name: String, _ path: String, method: String = "GET", after: [String] = [], sequence: String? = nil,
            body: String? = nil, download: String? = nil, secret: Bool = false
        ) -> Plan.Call {
            Plan.Call(
                name: name, method: method, url: base.absoluteString + path,
                headers: body == nil ? [:] : ["Content-Type": "application/json"],
                secretHeaders: secret ? ["Authorization": "Bearer ${\(tokenVariable)}"] : [:], body: body,
                bodyFile: nil, download: download.map { downloads.appendingPathComponent($0).path }, dependsOn: after,
                sequence: sequence, priority: 0, retry: retry, timeout: 10)
        }
        var calls = [call("catalog", "/catalog", sequence: "catalog")]
        for product in 1...8 {
            calls.append(call("product-\(product)", "/products/\(product)", after: ["catalog"], sequence: "catalog"))
        }
        for image in 1...4 {
            calls.append(
                call("image-\(image)", "/images/\(image)", after: ["product-\(image)"], download: "image-\(image).bin"))
        }
        calls.append(
            call(
                "order", "/orders", method: "POST", after: (1...8).map { "product-\($0)" },
                body: #"{"items": [1, 2, 3]}"#, secret: true))
        calls.append(call("receipt", "/orders/1001/receipt", after: ["order"]))
        return Plan(
            name: "demo", sequences: [Plan.Sequence(name: "catalog", bunchSize: 3, algorithm: "flat")], calls: calls)
    }
}
