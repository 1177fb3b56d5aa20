import AsyncHTTPClient
import Foundation
import Hummingbird
import Relay
import RelayServer

// The server that the benchmarks' P17 loads with wrk (see Benchmarks/Load/webhooks.sh):
//   WebhookLoad receiver PORT                        answers every POST /webhooks with 200
//   WebhookLoad direct PORT RECEIVER_URL             POST /orders sends the body to the receiver with AsyncHTTPClient
//   WebhookLoad relay-volatile PORT RECEIVER_URL     the same route through Relay, awaiting the delivery
//   WebhookLoad relay-file PORT RECEIVER_URL FOLDER  the same with a file store in FOLDER
// Each runs until SIGTERM or SIGINT.
let arguments = CommandLine.arguments
guard arguments.count >= 3, let port = Int(arguments[2]), arguments[1] == "receiver" || arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: WebhookLoad receiver|direct|relay-volatile|relay-file PORT ...\n".utf8))
    exit(64)
}
let configuration = ApplicationConfiguration(address: .hostname("127.0.0.1", port: port))
switch arguments[1] {
case "receiver":
    let router = Router()
    router.post("webhooks") { _, _ in HTTPResponse.Status.ok }
    try await Application(router: router, configuration: configuration).runService()
case "direct":
    try await runDirect(webhooks: arguments[3] + "/webhooks", configuration: configuration)
case "relay-volatile", "relay-file":
    let storage: any Storage =
        arguments[1] == "relay-file" && arguments.count >= 5
        ? FileStorage(at: URL(filePath: arguments[4])) : VolatileStorage()
    try await runRelay(
        webhooks: URL(string: arguments[3] + "/webhooks")!, storage: storage, configuration: configuration)
default:
    FileHandle.standardError.write(Data("unknown mode \(arguments[1])\n".utf8))
    exit(64)
}

/// The route sending each webhook with AsyncHTTPClient, configured as `AsyncHTTPClientTransport` configures its own.
func runDirect(webhooks: String, configuration: ApplicationConfiguration) async throws {
    var clientConfiguration = HTTPClient.Configuration()
    clientConfiguration.redirectConfiguration = .disallow
    clientConfiguration.connectionPool.retryConnectionEstablishment = false
    let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: clientConfiguration)
    let router = Router()
    router.post("orders") { request, context in
        var outgoing = HTTPClientRequest(url: webhooks)
        outgoing.method = .POST
        outgoing.headers.add(name: "Content-Type", value: "application/json")
        outgoing.body = .bytes(try await request.body.collect(upTo: context.maxUploadSize))
        let response = try await client.execute(outgoing, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw HTTPError(.badGateway) }
        return HTTPResponse.Status.created
    }
    try await Application(router: router, configuration: configuration).runService()
    try await client.shutdown()
}

/// The route enqueueing each webhook in Relay, over `AsyncHTTPClientTransport`, and awaiting its delivery.
func runRelay(webhooks: URL, storage: some Storage, configuration: ApplicationConfiguration) async throws {
    let point = try await DataPoint(storage: storage)
    let transport = AsyncHTTPClientTransport()
    point.register(HTTPExecutor(transport: transport), for: .http)
    let router = Router()
    router.post("orders") { request, context in
        let body = try await request.body.collect(upTo: context.maxUploadSize)
        let call = HTTPCall(
            method: .post, url: webhooks, headers: ["Content-Type": "application/json"], body: .data(Data(buffer: body))
        )
        _ = try await point.execute(call)
        return HTTPResponse.Status.created
    }
    var application = Application(
        router: router, configuration: configuration, services: [transport, RelayService(point)])
    application.beforeServerStarts { try await point.ready() }
    try await application.runService()
}
