import Foundation
import Relay

/// What a store holds, as the commands show it; it changes nothing.
///
/// A folder is read whole without opening it, so that it works while a running `relay` holds the store; a store that
/// a URL names gives a page of its operations, or its counts.
struct StoreReader {
    struct Entry {
        var stored: StoredOperation
        var name: String?
        var state: OperationQuery.State

        var id: UUID { stored.operation.id }
        var sequence: String { stored.operation.sequenceName.rawValue }
        var call: HTTPCall? { try? HTTPCall(operation: stored.operation) }
    }

    /// How messages name the store.
    let name: String
    /// The store's folder; `nil` for a database.
    let folder: URL?
    /// Whether a process runs on the store: a running `relay` serves a folder's events, and so holds it.
    let isLive: Bool
    let plans: [PlanRecord]
    /// The operations read: a folder's all, a remote store's one page.
    let entries: [Entry]
    /// How many operations each sequence holds in each state.
    let counts: [String: [OperationQuery.State: Int]]

    init(folder: URL) throws {
        guard
            FileManager.default.fileExists(atPath: folder.appendingPathComponent("journal").path)
                || FileManager.default.fileExists(atPath: folder.appendingPathComponent("snapshot").path)
        else {
            throw StoreProblem("no store at \(folder.path); run a plan first, or pass --store DIR")
        }
        let state = try FileStorage.read(at: folder)
        var isLive = false
        if let connection = EventFollower.connect(to: folder) {
            closeSocket(connection)
            isLive = true
        }
        // A folder's process runs what has started and waits for no retry.
        let started = state.operations.filter { $0.result == nil && $0.attempts > 0 && $0.retryAt == nil }
        let running = isLive ? Set(started.map(\.operation.id)) : []
        let decoder = JSONDecoder()
        let plans = (state.models[PlanRecord.collection] ?? [:]).values.compactMap {
            try? decoder.decode(PlanRecord.self, from: $0)
        }.sorted { $0.startedAt < $1.startedAt }
        self.init(
            name: folder.path, folder: folder, isLive: isLive, plans: plans,
            page: StoredPage(operations: state.operations, running: running, next: nil))
    }

    /// A page of a store that a URL names.
    init(name: String, page: StoredPage) {
        self.init(name: name, folder: nil, isLive: !page.running.isEmpty, plans: [], page: page)
    }

    /// The counts of a store that a URL names, which holds no plan: a plan runs on a folder.
    init(name: String, metrics: MetricsSnapshot) {
        self.name = name
        folder = nil
        isLive = metrics.running > 0
        plans = []
        entries = []
        counts = metrics.sequences.reduce(into: [:]) { counts, sequence in
            let (name, of) = (sequence.key.rawValue, sequence.value)
            let states: [OperationQuery.State: Int] = [
                .pending: of.pending, .running: of.running, .completed: of.completed, .skipped: of.skipped,
                .failed: of.failed, .cancelled: of.cancelled,
            ].filter { $0.value > 0 }
            // A sequence that the store knows but holds no operation of is not shown, as in a folder.
            if !states.isEmpty { counts[name] = states }
        }
    }

    private init(name: String, folder: URL?, isLive: Bool, plans: [PlanRecord], page: StoredPage) {
        self.name = name
        self.folder = folder
        self.isLive = isLive
        self.plans = plans
        entries = page.operations.map { stored in
            Entry(
                stored: stored, name: stored.operation.persistentUserInfo[PlanRecord.callNameKey],
                state: Self.state(of: stored, running: page.running.contains(stored.operation.id)))
        }
        counts = Dictionary(grouping: entries, by: \.sequence).mapValues { members in
            Dictionary(grouping: members, by: \.state).mapValues(\.count)
        }
    }

    private static func state(of stored: StoredOperation, running: Bool) -> OperationQuery.State {
        switch stored.result {
        case .completed?: .completed
        case .skipped?: .skipped
        case .failed?: .failed
        case .cancelled?: .cancelled
        case nil: running ? .running : .pending
        }
    }

    func entry(_ text: String) throws -> Entry {
        let matches = entries.filter {
            $0.id.uuidString.lowercased().hasPrefix(text.lowercased()) || $0.name == text
        }
        guard let entry = matches.last else {
            throw UsageError(message: "no operation \(text) in \(name); relay list shows the known ones")
        }
        guard matches.count == 1 || matches.allSatisfy({ $0.name == text }) else {
            throw UsageError(message: "\(text) matches \(matches.count) operations; give more of the id")
        }
        return entry
    }

    // MARK: - Reports

    /// The destinations the running plan finds offline; none when no relay process holds the store.
    var offline: [OfflineDestinations.Entry] {
        guard isLive, let folder else { return [] }
        return OfflineDestinations.read(in: folder)
    }

    func status() -> String {
        let running = folder == nil ? "processes are running on it" : "a relay process is running on it"
        var lines = ["Store \(name): " + (isLive ? running : "idle")]
        for entry in offline {
            lines.append(
                "Offline: \(entry.destination) since \(entry.since.formatted(date: .abbreviated, time: .standard)) "
                    + "(\(entry.reason)); its calls wait while it is probed")
        }
        for plan in plans {
            let ids = Set(plan.calls.map(\.operation))
            let calls = Dictionary(grouping: entries.filter { ids.contains($0.id) }, by: \.state).mapValues(\.count)
            lines.append(
                "Plan \(plan.id), started \(plan.startedAt.formatted(date: .abbreviated, time: .standard)): "
                    + "\(plan.calls.count) calls; " + Self.describe(calls))
        }
        let total = totals
        lines.append("Operations: \(total.values.reduce(0, +)); " + Self.describe(total))
        for (name, states) in counts.sorted(by: { $0.key < $1.key }) {
            let done = states.filter { $0.key.isTerminal }.values.reduce(0, +)
            lines.append(
                "  \(name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(done)/\(states.values.reduce(0, +)) "
                    + "finished")
        }
        return lines.joined(separator: "\n")
    }

    /// How many operations the store holds in each state, of every sequence.
    private var totals: [OperationQuery.State: Int] {
        counts.values.reduce(into: [:]) { total, states in total.merge(states, uniquingKeysWith: +) }
    }

    func statusJSON() -> String {
        func named(_ counts: [OperationQuery.State: Int]) -> [String: Int] {
            counts.reduce(into: [:]) { $0[$1.key.rawValue] = $1.value }
        }
        func states(_ members: [Entry]) -> [String: Int] {
            named(Dictionary(grouping: members, by: \.state).mapValues(\.count))
        }
        return EventLine.encode([
            "store": name, "live": isLive, "operations": totals.values.reduce(0, +), "states": named(totals),
            "offline": offline.map { entry in
                [
                    "destination": entry.destination, "reason": entry.reason,
                    "since": entry.since.formatted(.iso8601),
                ]
            },
            "plans": plans.map { plan in
                let ids = Set(plan.calls.map(\.operation))
                return [
                    "name": plan.id, "calls": plan.calls.count, "startedAt": plan.startedAt.formatted(.iso8601),
                    "states": states(entries.filter { ids.contains($0.id) }),
                ] as [String: Any]
            },
            "sequences": counts.mapValues(named),
        ])
    }

    static func describe(_ counts: [OperationQuery.State: Int]) -> String {
        let parts = OperationQuery.State.allCases.compactMap { state in counts[state].map { "\($0) \(state.rawValue)" }
        }
        return parts.isEmpty ? "none" : parts.joined(separator: ", ")
    }

    func line(_ entry: Entry) -> String {
        let target =
            entry.call.map { "\($0.method.rawValue) \($0.url.absoluteString)" } ?? "kind \(entry.stored.operation.kind)"
        return [
            entry.id.uuidString.lowercased(), entry.state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0),
            entry.sequence.padding(toLength: 9, withPad: " ", startingAt: 0),
            (entry.name ?? "-").padding(toLength: 16, withPad: " ", startingAt: 0), target,
        ].joined(separator: "  ")
    }

    func json(_ entry: Entry) -> String {
        var object: [String: Any] = [
            "id": entry.id.uuidString.lowercased(), "state": entry.state.rawValue, "sequence": entry.sequence,
            "attempts": entry.stored.attempts, "sends": entry.stored.attempts + entry.stored.unansweredSends,
            "enqueuedAt": entry.stored.enqueuedAt.formatted(.iso8601),
        ]
        let stored = entry.stored
        object["call"] = entry.name
        object["kind"] = stored.operation.kind.rawValue
        object["method"] = entry.call?.method.rawValue
        object["url"] = entry.call?.url.absoluteString
        object["headers"] = entry.call?.headers
        object["download"] = entry.call?.destination?.path
        object["maximumAttempts"] = stored.operation.retryPolicy.maximumAttempts
        object["idempotencyKey"] = stored.operation.idempotencyKey
        object["dependsOn"] = dependencyNames(of: stored)
        object["secretHeaders"] = secretHeaders(of: stored)
        object["firstStartedAt"] = stored.firstStartedAt.map { $0.formatted(.iso8601) }
        object["retryAt"] = stored.retryAt.map { $0.formatted(.iso8601) }
        object["finishedAt"] = stored.finishedAt.map { $0.formatted(.iso8601) }
        switch stored.result {
        case .completed(let data)?:
            let response = try? CallResponse(decoding: data)
            object["responseStatus"] = response?.status
            object["resultBytes"] = response?.body.count ?? data.count
        case .cancelled(let reason)?: object["cancelled"] = "\(reason)"
        case .failed?, .skipped?, nil: break
        }
        if let failure = Self.lastFailure(of: stored) {
            object["error"] = failure.reason
            object["responseStatus"] = failure.response?.status
            object["responseBody"] = failure.response.map { Self.preview($0.body) }
        }
        return EventLine.encode(object)
    }

    func show(_ entry: Entry) -> String {
        let stored = entry.stored
        var lines = [
            "Operation \(entry.id.uuidString.lowercased())" + (entry.name.map { " (\($0))" } ?? ""),
            "  state       \(entry.state.rawValue)", "  sequence    \(entry.sequence)",
            "  kind        \(stored.operation.kind)",
        ]
        if let call = entry.call {
            lines.append("  request     \(call.method.rawValue) \(call.url.absoluteString)")
            for (name, value) in call.headers.sorted(by: { $0.key < $1.key }) {
                lines.append("  header      \(name): \(value)")
            }
            if let destination = call.destination { lines.append("  download to \(destination.path)") }
        }
        for (header, variable) in secretHeaders(of: stored).sorted(by: { $0.key < $1.key }) {
            lines.append("  secret      \(header) from \(variable)")
        }
        if !stored.operation.dependencies.isEmpty {
            lines.append("  depends on  \(dependencyNames(of: stored).joined(separator: ", "))")
        }
        lines.append("  attempts    \(stored.attempts) of \(stored.operation.retryPolicy.maximumAttempts)")
        if stored.unansweredSends > 0 {
            // A send that got no answer gives its attempt back, so the attempts alone would hide it.
            let sends = stored.attempts + stored.unansweredSends
            lines.append(
                "  sent        \(sends) times: \(stored.unansweredSends) got no answer and did not count as an attempt")
        }
        lines.append("  enqueued    \(stored.enqueuedAt.formatted(date: .abbreviated, time: .standard))")
        if let started = stored.firstStartedAt {
            lines.append("  started     \(started.formatted(date: .abbreviated, time: .standard))")
        }
        if let retryAt = stored.retryAt {
            lines.append("  retry at    \(retryAt.formatted(date: .omitted, time: .standard))")
        }
        if let finished = stored.finishedAt {
            lines.append("  finished    \(finished.formatted(date: .abbreviated, time: .standard))")
        }
        switch stored.result {
        case .completed(let data)?: lines.append("  result      \(data.count) bytes")
        case .cancelled(let reason)?: lines.append("  cancelled   \(reason)")
        case .failed?, .skipped?, nil: break
        }
        if let failure = Self.lastFailure(of: stored) {
            lines.append("  last error  \(failure.reason) (\(failure.cause))")
            if let response = failure.response {
                lines.append("  response    HTTP \(response.status), \(response.body.count) bytes")
                if !response.body.isEmpty { lines.append("  body        \(Self.preview(response.body))") }
            }
        }
        lines.append("  idempotency \(stored.operation.idempotencyKey)")
        return lines.joined(separator: "\n")
    }

    /// The operation's dependencies, by call name where they have one, else by id.
    func dependencyNames(of stored: StoredOperation) -> [String] {
        stored.operation.dependencies.map { id in
            entries.first { $0.id == id }?.name ?? id.uuidString.lowercased()
        }.sorted()
    }

    /// The secret headers, each with the environment variable it is read from; the store holds no value.
    func secretHeaders(of stored: StoredOperation) -> [String: String] {
        var headers: [String: String] = [:]
        for (key, variable) in stored.operation.persistentUserInfo
        where key.hasPrefix(EnvironmentAuthorizer.userInfoPrefix) {
            headers[String(key.dropFirst(EnvironmentAuthorizer.userInfoPrefix.count))] = variable
        }
        return headers
    }

    /// A body as text, up to 1 KiB; a body that is not UTF-8 by its size.
    static func preview(_ body: Data) -> String {
        let head = body.prefix(1024)
        guard let text = String(data: head, encoding: .utf8) else { return "\(body.count) bytes, not text" }
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        return body.count > head.count ? flat + " … (\(body.count - head.count) more bytes)" : flat
    }

    /// The failure a failed operation ended with, or else the last failed attempt of one that has not succeeded.
    static func lastFailure(of stored: StoredOperation) -> CallFailure? {
        switch stored.result {
        case .failed(let failure)?: failure
        case .completed?, .skipped?: nil
        case .cancelled?, nil: stored.lastFailure
        }
    }

    /// The store's history as events, oldest first: when each operation was enqueued, first started, and finished.
    func history() -> [String] {
        entries.flatMap(timedEvents(of:)).sorted { $0.0 < $1.0 }.map(Self.encode)
    }

    /// One operation's events, as JSON lines: when it was enqueued, first started, and finished.
    func events(of entry: Entry) -> [String] {
        timedEvents(of: entry).map(Self.encode)
    }

    private func timedEvents(of entry: Entry) -> [(Date, [String: Any])] {
        var base: [String: Any] = ["operation": entry.id.uuidString.lowercased(), "sequence": entry.sequence]
        base["call"] = entry.name
        var events = [(entry.stored.enqueuedAt, base.merging(["event": "enqueued"]) { $1 })]
        if let started = entry.stored.firstStartedAt {
            events.append((started, base.merging(["event": "started"]) { $1 }))
        }
        if let finished = entry.stored.finishedAt {
            events.append((finished, base.merging(["event": entry.state.rawValue]) { $1 }))
        }
        return events
    }

    private static func encode(_ event: (Date, [String: Any])) -> String {
        EventLine.encode(event.1.merging(["time": event.0.formatted(.iso8601)]) { $1 })
    }
}
