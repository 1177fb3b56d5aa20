import Benchmark
import Dispatch
import Foundation
import Measuring
import Relay

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The unit of work every benchmark runs: an async call through an existential that does nothing, so that Relay and
/// its baselines pay for the same call and only the scheduling around it differs.
protocol Work: Sendable {
    func run() async
}

struct NoWork: Work {
    func run() async {}
}

let work: any Work = NoWork()

/// Relay's executor for the benchmarks: the same no-op call.
struct NoWorkExecutor: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        await work.run()
        return .completed(Data())
    }
}

let noop: CallKind = "noop"

/// The configuration of every benchmark DataPoint.
///
/// A service keeps one DataPoint for its life, so each Relay iteration runs an unmeasured warm-up round first:
/// finished operations are forgotten at once (handles keep their outcomes) and the measured round reuses their memory,
/// as a long-running process does. The event buffer is large enough that the P7 subscriber never drops.
let benchmarkConfiguration = DataPoint.Configuration(retention: .zero, eventBufferSize: 1 << 22)

/// Runs `body` on a running DataPoint with the no-op executor and the given bunch size on `data`.
func withPoint<Result>(
    bunchSize: Int,
    _ body: (DataPoint) async throws -> Result
) async throws -> Result {
    try await DataPoint.with(storage: .volatile, configuration: benchmarkConfiguration) { point in
        point.register(NoWorkExecutor(), for: noop)
        try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: bunchSize))
        return try await body(point)
    }
}

/// Runs one round of operations on a warm DataPoint, after an unmeasured round of the same shape, and returns what
/// `measure` makes of the measured round.
func warmRound<Measured>(
    bunchSize: Int,
    commitSize: Int = 1000,
    prepare: (DataPoint) async throws -> Void = { _ in },
    _ operations: () -> [CallOperation],
    measure: (_ round: () async throws -> Void) async throws -> Measured
) async throws -> Measured {
    try await withPoint(bunchSize: bunchSize) { point in
        try await prepare(point)
        try await enqueueAndAwait(commits(operations(), size: commitSize), on: point)
        let measured = commits(operations(), size: commitSize)
        return try await measure { try await enqueueAndAwait(measured, on: point) }
    }
}

/// The time one warm round takes (see ``warmRound(bunchSize:commitSize:prepare:_:measure:)``).
func timedWarmRound(
    bunchSize: Int,
    commitSize: Int = 1000,
    prepare: (DataPoint) async throws -> Void = { _ in },
    _ operations: () -> [CallOperation]
) async throws -> Duration {
    try await warmRound(bunchSize: bunchSize, commitSize: commitSize, prepare: prepare, operations) { round in
        try await timed(round)
    }
}

/// `count` independent no-op operations in `sequence`.
func independentOperations(_ count: Int, in sequence: CallSequence.Name = .data) -> [CallOperation] {
    (0..<count).map { _ in CallOperation(kind: noop, sequenceName: sequence) }
}

/// A chain: each operation depends on the one before.
func chain(_ count: Int) -> [CallOperation] {
    var operations: [CallOperation] = []
    operations.reserveCapacity(count)
    for _ in 0..<count {
        operations.append(CallOperation(kind: noop, dependencies: operations.last.map { [$0.id] } ?? []))
    }
    return operations
}

/// Operations split into commits of `size`: the arrays a caller enqueues one at a time, made before any timing starts,
/// as the operations themselves are.
func commits(_ operations: [CallOperation], size: Int = 1000) -> [[CallOperation]] {
    stride(from: 0, to: operations.count, by: size).map { start in
        Array(operations[start..<min(start + size, operations.count)])
    }
}

/// Enqueues each commit and awaits every outcome.
func enqueueAndAwait(_ commits: [[CallOperation]], on point: DataPoint) async throws {
    try await awaitCompletion(of: enqueue(commits, on: point))
}

/// Enqueues each commit and returns its handles, each commit's as `enqueue` returned them.
func enqueue(_ commits: [[CallOperation]], on point: DataPoint) async throws -> [[CallHandle]] {
    var handles: [[CallHandle]] = []
    handles.reserveCapacity(commits.count)
    for commit in commits {
        handles.append(try await point.enqueue(commit))
    }
    return handles
}

/// Awaits every outcome.
func awaitCompletion(of handles: [[CallHandle]]) async throws {
    for commit in handles {
        for handle in commit {
            // A benchmark that quietly stopped early would report a fiction; fail loudly instead.
            guard case .completed = try await handle.outcome else {
                fatalError("operation \(handle.id) did not complete")
            }
        }
    }
}

/// The baseline the goals name: a raw task group that spawns one child per operation, at most `width` at once.
func taskGroupBaseline(_ count: Int, width: Int) async {
    await withTaskGroup(of: Void.self) { group in
        var running = 0
        for _ in 0..<count {
            if running == width {
                await group.next()
                running -= 1
            }
            group.addTask { await work.run() }
            running += 1
        }
    }
}

/// `count` no-op block operations for OperationQueue.
///
/// `chained` makes each depend on the previous one. They are made before the timed part, as Relay's operations are.
func blockOperations(_ count: Int, chained: Bool = false) -> [Operation] {
    var operations: [Operation] = []
    operations.reserveCapacity(count)
    for _ in 0..<count {
        let operation = BlockOperation { blockingNoWork() }
        if chained, let previous = operations.last { operation.addDependency(previous) }
        operations.append(operation)
    }
    return operations
}

/// Runs the operations on an OperationQueue with `maxConcurrentOperationCount` set to `width`, and waits for them off
/// the cooperative pool, since `waitUntilFinished` blocks a thread.
func run(_ operations: [Operation], width: Int) async {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = width
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            queue.addOperations(operations, waitUntilFinished: true)
            continuation.resume()
        }
    }
}

/// OperationQueue's blocks are synchronous; this is the same no-op without the async call.
@inline(never)
func blockingNoWork() {}

/// A DAG: one root, `width` children that depend on it, one sink that depends on every child.
func fanOutFanIn(_ width: Int) -> [CallOperation] {
    let root = CallOperation(kind: noop)
    let children = (0..<width).map { _ in CallOperation(kind: noop, dependencies: [root.id]) }
    let sink = CallOperation(kind: noop, dependencies: Set(children.map(\.id)))
    return [root] + children + [sink]
}

/// The same DAG with a task group: the root, then the children at `width` at once, then the sink.
func fanOutFanInTaskGroup(_ children: Int, width: Int) async {
    await work.run()
    await taskGroupBaseline(children, width: width)
    await work.run()
}

/// The same DAG as OperationQueue's operations with dependencies.
func fanOutFanInBlockOperations(_ children: Int) -> [Operation] {
    let root = BlockOperation { blockingNoWork() }
    let sink = BlockOperation { blockingNoWork() }
    var operations: [Operation] = [root]
    for _ in 0..<children {
        let child = BlockOperation { blockingNoWork() }
        child.addDependency(root)
        sink.addDependency(child)
        operations.append(child)
    }
    operations.append(sink)
    return operations
}

/// A mixed workload over the three default sequences: data at bunch 8, downloads and uploads at 4, with every
/// tenth operation depending on an earlier one in another sequence.
func mixedOperations(_ count: Int) -> [CallOperation] {
    let names: [CallSequence.Name] = [.data, .downloads, .uploads]
    var operations: [CallOperation] = []
    operations.reserveCapacity(count)
    for index in 0..<count {
        let dependencies: Set<UUID> = index % 10 == 9 ? [operations[index - 5].id] : []
        operations.append(CallOperation(kind: noop, sequenceName: names[index % 3], dependencies: dependencies))
    }
    return operations
}

/// The plain AsyncStream the P7 goal compares with: one element per yield, consumed as it comes.
func asyncStreamBaseline(_ count: Int) async {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    await withTaskGroup(of: Void.self) { group in
        group.addTask {
            for value in 0..<count { continuation.yield(value) }
            continuation.finish()
        }
        var received = 0
        for await _ in stream { received += 1 }
        precondition(received == count)
    }
}

/// A fresh folder for a file store, removed by the caller.
func temporaryStoreFolder(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("relay-benchmark-\(name)-\(UUID().uuidString)")
}

/// P4's baseline: each operation's record written and synced on its own, on the same disk as the store.
func oneSyncPerOperation(_ count: Int, in folder: URL) throws {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let path = folder.appendingPathComponent("journal").path
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? handle.close() }
    let record = Data(repeating: 0x2A, count: 128)
    for _ in 0..<count {
        try handle.write(contentsOf: record)
        try handle.synchronize()
    }
}

/// A folder holding `count` pending operations, built once per run and reused by every reopen.
func storeWithPendingOperations(_ count: Int) async throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-benchmark-pending-\(count)")
    if FileManager.default.fileExists(atPath: folder.appendingPathComponent("snapshot").path) { return folder }
    try? FileManager.default.removeItem(at: folder)
    let point = try await DataPoint(
        storage: .file(at: folder, options: FileStorage.Options(fsync: .never)),
        configuration: benchmarkConfiguration
    )
    point.register(NoWorkExecutor(), for: noop)
    try await point.suspend()
    var enqueued = 0
    while enqueued < count {
        let batch = min(10_000, count - enqueued)
        _ = try await point.enqueue(independentOperations(batch))
        enqueued += batch
    }
    // Shutting down folds the journal into a snapshot, which is what a reopen reads.
    try await point.shutdown()
    return folder
}
