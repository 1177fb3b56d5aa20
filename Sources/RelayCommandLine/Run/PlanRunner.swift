import Foundation
import Relay

/// Runs a plan durably on a file store: the first run commits the plan's calls with the record that names them, in one
/// transaction; a later run of the same plan finds the record and resumes, so that no completed call is sent again.
struct PlanRunner: Sendable {
    var plan: Plan
    var store: URL
    /// One JSON line per event instead of live bars.
    var json: Bool
    var environment: [String: String]

    /// Keeps what a run did, failures included, for 30 days, so that `relay status` and `relay list` show it and
    /// a plan run again within them knows how each of its calls ended.
    static let configuration = DataPoint.Configuration(
        retention: .seconds(30 * 86_400), deadLetterRetention: .seconds(30 * 86_400), shutdownGracePeriod: .seconds(5))

    /// Opens the store without starting anything, with the plan's executor and model.
    static func open(_ store: URL, environment: [String: String]) async throws -> DataPoint {
        let executor = HTTPExecutor(authorizer: EnvironmentAuthorizer(environment: environment))
        let point = try await DataPoint(
            storage: .file(at: store), configuration: configuration, executors: [.http: executor])
        try point.register(PlanRecord.self, as: PlanRecord.collection)
        // What recovery did, in words, whenever it did more than read the store back.
        if let report = point.recoveryReport, report.cutSomething || report.interruptedOperations > 0 {
            Output.error("relay: the store at \(store.path) was recovered: \(report).")
        }
        return point
    }

    func run() async throws -> ExitStatus {
        try plan.checkSecrets(of: callsToSend(), in: environment)
        for call in plan.calls {
            guard let download = call.download else { continue }
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: download).deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        let point = try await Self.open(store, environment: environment)
        let record: PlanRecord
        do {
            for sequence in plan.sequences {
                _ = try await point.upsertCallSequence(
                    CallSequence(
                        name: CallSequence.Name(rawValue: sequence.name), bunchSize: sequence.bunchSize,
                        algorithm: CallSequence.Algorithm(rawValue: sequence.algorithm) ?? .flat))
            }
            record = try await commitOrResume(on: point)
        } catch {
            try? await point.shutdown()
            throw error
        }
        let events = point.events()
        let broadcast = EventBroadcast(store: store)
        let json = self.json
        let signal = InterruptSignal(
            { _ in
                point.beginShutdown()
                Output.line(
                    json
                        ? #"{"event":"stopping"}"#
                        : "Stopping: running calls may finish for 5 s (Ctrl-C again stops at once); "
                            + "the same command resumes the rest.")
            },
            now: {
                // What the store acknowledged stays; calls cut short run again, under the same idempotency key.
                Output.line(json ? #"{"event":"stopped"}"# : "Stopped at once; the same command resumes.")
                // `_exit`: `exit` would run the process's teardown beside threads that are still at work.
                _exit(ExitStatus.interrupted.rawValue)
            })
        defer {
            signal.cancel()
            broadcast.stop()
        }
        var finishedEarlier: [UUID: CallResult] = [:]
        for entry in record.calls {
            let status = try await point.status(of: entry.operation)
            if case .finished(let result) = status?.state {
                finishedEarlier[entry.operation] = result
            } else if status == nil {
                // Forgotten once its 30 days of retention passed, however it ended: counted as done, not sent again.
                finishedEarlier[entry.operation] = .skipped
            }
        }
        let tally = RunTally(record: record, finishedEarlier: finishedEarlier, started: Date())
        async let reported = Self.report(events, tally: tally, json: json, broadcast: broadcast, store: store)
        async let running: Void = point.run()
        let unfinished = record.calls.map(\.operation).filter { finishedEarlier[$0] == nil }
        let interrupted = await Self.awaitCalls(unfinished, on: point, deadline: plan.deadline, json: json)
        try await point.shutdown()
        try await running
        var final = await reported
        // Calls that finished during the grace period ended after the event stream did: the store has them.
        for entry in record.calls {
            guard let status = try await point.status(of: entry.operation), case .finished(let result) = status.state
            else {
                continue
            }
            final.settle(entry.operation, result, runTime: status.metrics.runTime)
        }
        if json {
            Output.line(TerminalBoard.summaryJSON(final, interrupted: interrupted))
        } else {
            Output.line(TerminalBoard.summary(final, interrupted: interrupted))
        }
        if interrupted { return .interrupted }
        return final.succeeded ? .success : .failure
    }

    /// The names of the calls this run may send.
    ///
    /// All of them, less those that ended in an earlier run of the same plan on this store, which need no secrets any
    /// more. The store is read without being opened.
    private func callsToSend() -> Set<String> {
        let names = Set(plan.calls.map(\.name))
        guard let reader = try? StoreReader(folder: store),
            let record = reader.plans.first(where: { $0.id == plan.name && $0.digest == plan.digest })
        else { return names }
        let states = Dictionary(reader.entries.map { ($0.id, $0.state) }, uniquingKeysWith: { first, _ in first })
        let ended = record.calls.filter { call in
            guard let state = states[call.operation] else { return true }
            return state != .pending && state != .running
        }
        return names.subtracting(ended.map(\.name))
    }

    /// Waits until every call has finished, or the DataPoint stops (Ctrl-C); returns whether it stopped first.
    ///
    /// Past the plan's deadline, the calls that have not finished are cancelled, and the wait ends as they do.
    private static func awaitCalls(
        _ ids: [UUID], on point: DataPoint, deadline: Double?, json: Bool
    ) async -> Bool {
        await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                for id in ids {
                    do {
                        _ = try await point.handle(for: id).outcome
                    } catch {
                        return true
                    }
                }
                return false
            }
            if let deadline {
                group.addTask {
                    do {
                        try await ContinuousClock().sleep(for: .seconds(deadline))
                    } catch {
                        return nil
                    }
                    var cancelled = 0
                    for id in ids where (try? await point.cancel(id)) == true { cancelled += 1 }
                    Output.line(
                        json
                            ? #"{"event":"deadline","seconds":\#(deadline),"cancelled":\#(cancelled)}"#
                            : "The plan's deadline of \(deadline.readableSeconds) passed: \(cancelled) unfinished "
                                + "calls cancelled.")
                    return nil
                }
            }
            var interrupted = false
            while let next = await group.next() {
                guard let stopped = next else { continue }
                interrupted = stopped
                group.cancelAll()
            }
            return interrupted
        }
    }

    /// The plan's record: the one a store already holds for this plan, or a new one committed with the plan's
    /// operations.
    private func commitOrResume(on point: DataPoint) async throws -> PlanRecord {
        if let record = try point.model(PlanRecord.self, id: plan.name) {
            guard record.digest == plan.digest else {
                throw PlanError(
                    field: "plan",
                    message: "the store at \(store.path) already ran a different plan named \"\(plan.name)\", "
                        + "started \(record.startedAt); give this one another name or another --store")
            }
            return record
        }
        let (record, operations) = try PlanRecord.operations(of: plan, at: Date())
        try await point.transaction { transaction in
            try transaction.upsert(record)
            transaction.enqueue(operations)
        }
        return record
    }

    /// Draws or prints the run's events until the DataPoint stops, and returns the final tally.
    private static func report(
        _ events: CallEventStream, tally: RunTally, json: Bool, broadcast: EventBroadcast, store: URL
    ) async -> RunTally {
        var tally = tally
        var board = TerminalBoard()
        var offline = OfflineDestinations(store: store)
        // What a run killed earlier left is not this run's.
        offline.remove()
        defer { offline.remove() }
        if !json { board.draw(tally, force: true) }
        for await event in events {
            let call = event.operationID.flatMap { tally.names[$0] }
            let finished = tally.apply(event)
            offline.note(event)
            if json || broadcast.hasFollowers {
                let line = EventLine.json(event, call: call)
                broadcast.send(line)
                if json { Output.line(line) }
            }
            guard !json else { continue }
            if let note = TerminalBoard.note(for: event, call: call) {
                board.note(note, tally)
            } else if finished {
                board.draw(tally)
            }
        }
        if !json { board.draw(tally, force: true) }
        return tally
    }
}
