import Foundation
import PostgresNIO
import Relay
import RelayPostgres

// The process that the PostgreSQL crash tests start and kill with SIGKILL: it opens a DataPoint on the database that
// its arguments name (host, port, user, database), enqueues operations one commit after another, and prints the id of
// each as soon as its enqueue returns, that is once the store has acknowledged it.

let arguments = CommandLine.arguments
guard arguments.count == 5, let port = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: RelayPostgresWorker HOST PORT USER DATABASE\n".utf8))
    exit(2)
}
let configuration = PostgresConnection.Configuration(
    host: arguments[1], port: port, username: arguments[3], password: nil, database: arguments[4], tls: .disable)
try await DataPoint.with(storage: .postgres(configuration)) { point in
    // Enqueued work waits in a suspended sequence: the test checks what was acknowledged, not what ran.
    point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "noop")
    _ = try await point.sequence(named: .data)?.suspend()
    while true {
        let operation = CallOperation(kind: "noop")
        try await point.enqueue(operation)
        // Unbuffered: a line the test reads was written before the process died.
        FileHandle.standardOutput.write(Data("acked \(operation.id.uuidString)\n".utf8))
    }
}
