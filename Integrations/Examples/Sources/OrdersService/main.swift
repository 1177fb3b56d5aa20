import Foundation
import Hummingbird
import Orders
import Relay
import RelayServer

// The orders service as a process: `swift run OrdersService`, then
// `curl -X POST localhost:8080/orders -d '{"id":1,"item":"tea"}'`. SIGTERM or SIGINT drains it.
let environment = ProcessInfo.processInfo.environment
let port = environment["ORDERS_PORT"].flatMap(Int.init) ?? 8080
let receiver = URL(string: environment["ORDERS_RECEIVER"] ?? "http://127.0.0.1:8081")!
let folder = URL(filePath: environment["ORDERS_STORE"] ?? ".relay/orders")

let point = try await DataPoint(storage: FileStorage(at: folder))
let application = try ordersApplication(
    point: point,
    receiver: receiver,
    transport: AsyncHTTPClientTransport(),
    configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port))
)
try await application.runService()
