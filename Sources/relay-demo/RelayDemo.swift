import Foundation
import Relay

/// Runs a small dependency graph across the three default sequences and prints what happens.
///
/// The graph is committed in one transaction with the profile it updates, and the operation that publishes the profile
/// completes with the profile's new state, in the same commit. One operation fails twice before it succeeds, so the
/// output shows retries with their backoff; the last operation runs even if something before it fails, so the output
/// always ends with a summary.
@main
struct RelayDemo {
    static func main() async throws {
        let start = Date()
        try await DataPoint.with { point in
            point.register(SimulatedWork(), for: "work")
            point.register(FlakyUpload(), for: "flaky-upload")
            point.register(PublishProfile(), for: "publish")
            try point.register(Profile.self, as: "profiles")
            let graph = DemoGraph()
            let events = point.events()
            print("Relay demo: \(graph.operations.count) operations across data, downloads and uploads")
            if let report = point.recoveryReport {
                print(
                    "Store \(FileStorage.defaultFolder.path): \(report.operationsRecovered) operations kept from earlier runs"
                )
            }
            print()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var finished = 0
                    for await event in events {
                        print(describe(event, names: graph.names, since: start))
                        if event.kind.isTerminal { finished += 1 }
                        if finished == graph.operations.count { break }
                    }
                }
                // The profile and the work that follows from it, in one atomic commit.
                let handles = try await point.transaction { tx in
                    try tx.upsert(Profile(id: "me", status: "updating"))
                    tx.enqueue(graph.operations)
                }
                for handle in handles { _ = try await handle.outcome }
                try await group.waitForAll()
            }
            printSummary(point.metrics())
            if let profile = try point.model(Profile.self, id: "me") {
                print("  profile    \(profile.status), as the publishing operation left it in its commit")
            }
        }
    }

    static func describe(_ event: CallEvent, names: [UUID: String], since start: Date) -> String {
        let elapsed = String(format: "%7.1f ms", event.date.timeIntervalSince(start) * 1000)
        let name = event.operationID.flatMap { names[$0] } ?? event.sequenceName?.rawValue ?? "data point"
        let what: String
        switch event.kind {
        case .enqueued(let snapshot): what = "enqueued in commit \(snapshot)"
        case .started(let attempt): what = "started, attempt \(attempt)"
        case .attemptEnded(let report): what = "attempt \(report.attempt) ended: \(outcome(of: report))"
        case .completed(let metrics): what = "completed after \(milliseconds(metrics.runTime)) running"
        case .skipped: what = "skipped"
        case .retryScheduled(let attempt, let at, let reason):
            what = "attempt \(attempt) failed (\(reason)); retry in \(Int(at.timeIntervalSince(event.date) * 1000)) ms"
        case .failed(let failure, _): what = "failed: \(failure)"
        case .cancelled(let reason, _): what = "cancelled: \(reason)"
        case .held(let until, _): what = until.map { "held until \($0)" } ?? "hold released"
        case .suspended(let reason): what = "suspended: \(reason)"
        case .resumed(let reason): what = "resumed: \(reason)"
        case .offline, .online, .modelChanged: what = "\(event.kind)"
        case .dropped(let dropped): what = "\(dropped.count) events dropped"
        case .recovered(let report): what = "recovered \(report.operationsRecovered) operations"
        }
        let sequence = event.sequenceName.map { "[\($0)]" } ?? ""
        return "#\(event.sequenceNumber)\t\(elapsed)  \(name.padding(toLength: 16, withPad: " ", startingAt: 0))"
            + "\(sequence.padding(toLength: 12, withPad: " ", startingAt: 0)) \(what)"
    }

    static func outcome(of report: AttemptReport) -> String {
        if let error = report.error { return error }
        if let status = report.httpStatus { return "HTTP \(status)" }
        return "reported"
    }

    static func printSummary(_ metrics: MetricsSnapshot) {
        let total = metrics.total
        print(
            """

            Summary
              completed \(total.completed), skipped \(total.skipped), failed \(total.failed), \
            cancelled \(total.cancelled), pending \(total.pending)
              queue wait  p50 \(milliseconds(metrics.queueWait.p50))  p90 \(milliseconds(metrics.queueWait.p90))  \
            p99 \(milliseconds(metrics.queueWait.p99))
              run time    p50 \(milliseconds(metrics.runTime.p50))  p90 \(milliseconds(metrics.runTime.p90))  \
            p99 \(milliseconds(metrics.runTime.p99))
            """
        )
        for (name, counts) in metrics.sequences.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            print("  \(name.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) completed \(counts.completed)")
        }
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(
            format: "%.1f ms",
            Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1000)
    }
}

/// Stands in for real work: waits as long as the payload says, in milliseconds.
struct SimulatedWork: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        let milliseconds = Int(String(decoding: operation.payload, as: UTF8.self)) ?? 10
        try await Task.sleep(for: .milliseconds(milliseconds))
        return .completed(Data())
    }
}

/// The document's one model in the demo.
struct Profile: Model {
    let id: String
    var status: String
}

/// Publishes the profile, and completes with its new state in the same commit.
struct PublishProfile: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        try await Task.sleep(for: .milliseconds(10))
        try context.stage { tx in try tx.upsert(Profile(id: "me", status: "published")) }
        return .completed(Data())
    }
}

/// An upload whose first two attempts fail, as a flaky network would.
struct FlakyUpload: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        try await Task.sleep(for: .milliseconds(15))
        guard context.attempt > 2 else { return .retry(reason: "upload interrupted") }
        return .completed(Data())
    }
}

/// A profile update: fetch, download, resize, upload, publish, notify.
struct DemoGraph {
    let operations: [CallOperation]
    let names: [UUID: String]

    init() {
        var names: [UUID: String] = [:]
        func work(
            _ name: String,
            _ milliseconds: Int,
            in sequence: CallSequence.Name,
            after dependencies: [CallOperation] = [],
            kind: CallKind = "work",
            onDependencyFailure: CallOperation.DependencyFailurePolicy = .cancel
        ) -> CallOperation {
            let operation = CallOperation(
                kind: kind,
                sequenceName: sequence,
                dependencies: Set(dependencies.map(\.id)),
                payload: Data(String(milliseconds).utf8),
                persistentUserInfo: ["name": name],
                retryPolicy: RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(40), jitter: .none),
                onDependencyFailure: onDependencyFailure
            )
            names[operation.id] = name
            return operation
        }
        let config = work("fetch-config", 20, in: .data)
        let avatar = work("download-avatar", 40, in: .downloads, after: [config])
        let feed = work("download-feed", 30, in: .downloads, after: [config])
        let resize = work("resize-avatar", 25, in: .data, after: [avatar])
        let upload = work("upload-avatar", 0, in: .uploads, after: [resize], kind: "flaky-upload")
        let publish = work("publish-profile", 10, in: .data, after: [upload, feed], kind: "publish")
        let notify = work("notify", 5, in: .data, after: [publish], onDependencyFailure: .runAnyway)
        operations = [config, avatar, feed, resize, upload, publish, notify]
        self.names = names
    }
}
