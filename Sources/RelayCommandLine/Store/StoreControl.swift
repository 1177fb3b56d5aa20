import Foundation
import Relay

/// The commands that change a store: they open it without running anything, make their one change durably, and
/// close it.
enum StoreControl {
    /// Finds the operation that `text` names, then opens the store for one change, with a clear message when a
    /// running `relay` holds a folder.
    static func withStore(
        _ store: StoreLocation, naming text: String,
        _ body: @escaping @Sendable (DataPoint, StoreReader, StoreReader.Entry) async throws -> ExitStatus
    ) async throws -> ExitStatus {
        switch store {
        case .remote(let url, let kind):
            return try await StoreView.with(store) { view in
                let (reader, entry) = try await view.entry(text)
                // Other processes run on a database while this one changes it: the change is one more commit.
                let status = try await kind.withDataPoint(url) { point in
                    try await body(point, reader, entry).rawValue
                }
                return ExitStatus(rawValue: status) ?? .failure
            }
        case .folder(let folder):
            let reader = try StoreReader(folder: folder)
            let entry = try reader.entry(text)
            let point: DataPoint
            do {
                point = try await PlanRunner.open(folder, environment: [:])
            } catch let error as RelayError where error.code == .storeLocked {
                throw StoreProblem(
                    "the store at \(folder.path) is held by a running relay process. "
                        + "Stop it with Ctrl-C (it resumes when run again), then run this command again; "
                        + "relay status, list, show and events work while it runs.")
            }
            let status: ExitStatus
            do {
                status = try await body(point, reader, entry)
            } catch {
                // The body's failure is the one to report.
                try? await point.shutdown()
                throw error
            }
            try await point.shutdown()
            return status
        }
    }

    static func cancel(_ text: String, store: StoreLocation) async throws -> ExitStatus {
        try await withStore(store, naming: text) { point, _, entry in
            guard try await point.cancel(entry.id) else {
                Output.error("relay: \(label(entry)) has already finished: \(entry.state.rawValue)")
                return .failure
            }
            Output.line("Cancelled \(label(entry)); operations that depend on it are cancelled with it.")
            return .success
        }
    }

    /// Enqueues a failed or cancelled operation again and, when it is a plan's call, points the plan's record at the
    /// new operation in the same transaction, so that running the plan again awaits the replay.
    static func replay(_ text: String, store: StoreLocation) async throws -> ExitStatus {
        try await withStore(store, naming: text) { point, reader, entry in
            guard entry.state == .failed || entry.state == .cancelled else {
                Output.error("relay: \(label(entry)) is \(entry.state.rawValue); only failed or cancelled ones replay")
                return .failure
            }
            let copy = entry.stored.operation.replayed()
            var plans = reader.plans.filter { plan in plan.calls.contains { $0.operation == entry.id } }
            for index in plans.indices {
                for call in plans[index].calls.indices where plans[index].calls[call].operation == entry.id {
                    plans[index].calls[call].operation = copy.id
                }
            }
            try await point.transaction { transaction in
                for plan in plans { try transaction.upsert(plan) }
                transaction.enqueue(copy)
            }
            Output.line(
                "Replayed \(label(entry)) as \(copy.id.uuidString.lowercased()), with the same idempotency key; "
                    + (plans.isEmpty
                        ? "it runs the next time relay runs on this store."
                        : "run the plan again to send it."))
            return .success
        }
    }

    private static func label(_ entry: StoreReader.Entry) -> String {
        entry.id.uuidString.lowercased() + (entry.name.map { " (\($0))" } ?? "")
    }
}
