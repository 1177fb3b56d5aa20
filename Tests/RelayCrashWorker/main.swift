import Foundation
import Relay
import RelayTesting

// The process the crash tests kill.
//
//   RelayCrashWorker run <folder> <seed>   enqueues commits forever on a file store, printing "ack <ids>" once each
//                                          enqueue returns, while the operations run
//   RelayCrashWorker document <folder>     commits transactions forever, each two models and an operation whose
//                                          completion keeps a receipt model, printing "ack <n> <id>" once each returns
//   RelayCrashWorker hold <folder>         opens the store, prints "holding", and keeps it open until stdin closes
//
// The other modes exit when stdin closes too: a worker outlives no test.

/// A little work per operation, so that kills land while operations run.
struct YieldingWork: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        for _ in 0..<Int(operation.payload.first ?? 1) { await Task.yield() }
        return .completed(operation.payload)
    }
}

/// Half of a transaction's pair of models: both halves are there after a crash, or neither is.
struct Half: Model {
    let id: String
    let transaction: Int
}

/// What an operation's completion keeps, in the commit of the completion.
struct Receipt: Model {
    let id: UUID
}

/// Completes with a receipt of the operation, after a little work.
struct ReceiptWork: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        for _ in 0..<Int(operation.payload.first ?? 1) { await Task.yield() }
        try context.stage { tx in try tx.upsert(Receipt(id: operation.id)) }
        return .completed(operation.payload)
    }
}

/// Writes a whole line at once, unbuffered, so that the parent reads it before a kill.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: RelayCrashWorker run <folder> <seed> | hold <folder>\n".utf8))
    exit(64)
}
let folder = URL(fileURLWithPath: arguments[2])

switch arguments[1] {
case "hold":
    let point = try await DataPoint(storage: .file(at: folder))
    say("holding")
    while readLine() != nil {}
    try await point.shutdown()
case "document":
    ChildProcess.exitWhenInputCloses()
    try await DataPoint.with(storage: .file(at: folder)) { point in
        point.register(ReceiptWork(), for: "receipt")
        try point.register(Half.self, as: "halves")
        try point.register(Receipt.self, as: "receipts")
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
        for transaction in 0... {
            let operation = CallOperation(kind: "receipt", payload: Data([UInt8(1 + transaction % 40)]))
            try await point.transaction { tx in
                try tx.upsert(Half(id: "\(transaction)-a", transaction: transaction))
                try tx.upsert(Half(id: "\(transaction)-b", transaction: transaction))
                tx.enqueue(operation)
            }
            say("ack \(transaction) \(operation.id.uuidString)")
        }
    }
default:
    ChildProcess.exitWhenInputCloses()
    var random = SplitMix64(seed: UInt64(arguments.count > 3 ? arguments[3] : "1") ?? 1)
    try await DataPoint.with(storage: .file(at: folder)) { point in
        point.register(YieldingWork(), for: "work")
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
        while true {
            var commit: [CallOperation] = []
            for index in 0..<(1 + Int(random.next() % 16)) {
                let dependencies: Set<UUID> =
                    index > 0 && random.next() % 3 == 0 ? [commit[Int(random.next() % UInt64(index))].id] : []
                let payload = Data([UInt8(1 + random.next() % 40)])
                commit.append(CallOperation(kind: "work", dependencies: dependencies, payload: payload))
            }
            _ = try await point.enqueue(commit)
            say("ack " + commit.map(\.id.uuidString).joined(separator: " "))
        }
    }
}
