import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting

// The process that the PostgreSQL crash tests start and kill with SIGKILL, on the database that its arguments name
// (host, port, user, database). Every line it prints is unbuffered: a line the test reads was written before the
// process died.
//
// - `enqueue`: opens a DataPoint on the single-process store and enqueues operations one commit after another,
//   printing the id of each as soon as its enqueue returns, that is once the store has acknowledged it.
// - `claim LEASE`: opens a DataPoint on the fleet's store with leases of LEASE seconds, registers sequence `orders`,
//   prints `ready`, then claims what is enqueued there and starts it, printing the id of each attempt as it starts;
//   its attempts never end.
// - `run LEASE`: opens a DataPoint on the fleet's store with leases of LEASE seconds, registers sequences `s1` to `s4`
//   with bunch sizes 2 to 5, prints `ready`, then runs what it claims (HTTP calls) until it is killed.

let arguments = CommandLine.arguments
guard arguments.count >= 6, let port = Int(arguments[3]) else {
    FileHandle.standardError.write(
        Data("usage: RelayPostgresWorker enqueue|claim HOST PORT USER DATABASE [LEASE]\n".utf8))
    exit(2)
}
let (mode, host, user, database) = (arguments[1], arguments[2], arguments[4], arguments[5])
// Its input closes when the test that started it ends, however it ends: the worker ends too.
ChildProcess.exitWhenInputCloses()

@Sendable func say(_ line: String) {
    FileHandle.standardOutput.write(Data("\(line)\n".utf8))
}

/// Waits until the task is cancelled, or the process dies.
@Sendable func waitForever() async {
    let (never, keep) = AsyncStream<Void>.makeStream()
    for await _ in never {}
    keep.finish()
}

/// Runs `body` with a running DataPoint on the fleet's store, with leases of `arguments[6]` seconds.
func withFleetPoint(
    executors: [CallKind: any CallExecutor] = [:], _ body: @Sendable (DataPoint) async throws -> Void
) async throws {
    guard arguments.count == 7, let lease = Int(arguments[6]) else { exit(2) }
    var configuration = PostgresClient.Configuration(
        host: host, port: port, username: user, password: nil, database: database, tls: .disable)
    // Several workers and the tests beside them share the server's connection limit.
    configuration.options.maximumConnections = 6
    let client = PostgresClient(configuration: configuration)
    var options = PostgresFleetStorage.Options()
    options.lease = .seconds(lease)
    options.pollInterval = .milliseconds(100)
    try await withThrowingDiscardingTaskGroup { group in
        group.addTask { await client.run() }
        try await DataPoint.with(
            storage: PostgresFleetStorage(client: client, options: options), executors: executors, body)
        group.cancelAll()
    }
}

switch mode {
case "enqueue":
    let configuration = PostgresConnection.Configuration(
        host: host, port: port, username: user, password: nil, database: database, tls: .disable)
    try await DataPoint.with(storage: .postgres(configuration)) { point in
        // Enqueued work waits in a suspended sequence: the test checks what was acknowledged, not what ran.
        point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "noop")
        _ = try await point.sequence(named: .data)?.suspend()
        while true {
            let operation = CallOperation(kind: "noop")
            try await point.enqueue(operation)
            say("acked \(operation.id.uuidString)")
        }
    }
case "claim":
    // Attempts that never end: the process holds its claims until it dies.
    let stuck = ClosureExecutor { operation, _ in
        say("started \(operation.id.uuidString)")
        await waitForever()
        return .completed(Data())
    }
    try await withFleetPoint(executors: ["work": stuck]) { point in
        try await point.upsertCallSequence(CallSequence(name: "orders", bunchSize: 1000))
        say("ready")
        await waitForever()
    }
case "run":
    try await withFleetPoint { point in
        for number in 1...4 {
            try await point.upsertCallSequence(
                CallSequence(name: CallSequence.Name(rawValue: "s\(number)"), bunchSize: number + 1))
        }
        say("ready")
        await waitForever()
    }
default:
    exit(2)
}
