import Foundation
import Relay

/// What a run has done so far, by sequence, from the events of its calls: what the progress bars draw and the summary
/// reports.
struct RunTally: Sendable {
    struct Lane: Sendable {
        var name: String
        var total = 0
        var done = 0
        /// Calls finished in this run, for its rate.
        var doneNow = 0
    }

    /// The calls' names by operation id.
    let names: [UUID: String]
    private(set) var lanes: [Lane] = []
    private var laneOfCall: [UUID: Int] = [:]
    private(set) var completed = 0
    private(set) var failed = 0
    private(set) var cancelled = 0
    private(set) var skipped = 0
    /// Calls finished in an earlier run.
    private(set) var finishedEarlier = 0
    private(set) var retries = 0
    private(set) var offlinePeriods = 0
    private(set) var failures: [(call: String, reason: String)] = []
    private var runTimes: [Double] = []
    let started: Date

    init(record: PlanRecord, finishedEarlier: [UUID: CallResult], started: Date) {
        self.started = started
        names = Dictionary(uniqueKeysWithValues: record.calls.map { ($0.operation, $0.name) })
        for entry in record.calls {
            if !lanes.contains(where: { $0.name == entry.sequence }) { lanes.append(Lane(name: entry.sequence)) }
            let lane = lanes.firstIndex { $0.name == entry.sequence }!
            lanes[lane].total += 1
            if let result = finishedEarlier[entry.operation] {
                lanes[lane].done += 1
                self.finishedEarlier += 1
                count(result, call: entry.name)
            } else {
                laneOfCall[entry.operation] = lane
            }
        }
    }

    var total: Int { lanes.reduce(0) { $0 + $1.total } }
    var done: Int { lanes.reduce(0) { $0 + $1.done } }
    var succeeded: Bool { completed + skipped == total }

    /// Counts an event of one of the run's calls; returns whether it finished a call.
    @discardableResult
    mutating func apply(_ event: CallEvent) -> Bool {
        switch event.kind.value {
        case .retryScheduled: retries += 1
        case .offline: offlinePeriods += 1
        default: break
        }
        guard event.kind.isTerminal, let id = event.operationID, let lane = laneOfCall.removeValue(forKey: id) else {
            return false
        }
        lanes[lane].done += 1
        lanes[lane].doneNow += 1
        switch event.kind.value {
        case .completed(let metrics):
            runTimes.append(metrics.runTime.seconds)
            completed += 1
        case .skipped: skipped += 1
        case .failed(let failure, _): count(.failed(failure), call: names[id] ?? id.uuidString.lowercased())
        case .cancelled(let reason, _): count(.cancelled(reason), call: names[id] ?? id.uuidString.lowercased())
        default: break
        }
        return true
    }

    /// Counts a call that finished with `result` if no event of it was counted: one that ended while the run stopped,
    /// after its event stream had ended, as the store holds it.
    mutating func settle(_ id: UUID, _ result: CallResult, runTime: Duration) {
        guard let lane = laneOfCall.removeValue(forKey: id) else { return }
        lanes[lane].done += 1
        lanes[lane].doneNow += 1
        if case .completed = result { runTimes.append(runTime.seconds) }
        count(result, call: names[id] ?? id.uuidString.lowercased())
    }

    private mutating func count(_ result: CallResult, call: String) {
        switch result {
        case .completed: completed += 1
        case .skipped: skipped += 1
        case .failed(let failure):
            failed += 1
            failures.append((call, failure.description))
        case .cancelled(let reason):
            cancelled += 1
            failures.append((call, "cancelled: \(reason)"))
        }
    }

    /// The run time below which `fraction` of this run's completed calls fell, in seconds.
    func percentile(_ fraction: Double) -> Double? {
        guard !runTimes.isEmpty else { return nil }
        let sorted = runTimes.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
    }
}

extension Double {
    /// Seconds, readable: `850 ms`, `2.4 s`, `3 min 12 s`.
    var readableSeconds: String {
        if self < 1 { return "\(Int((self * 1000).rounded())) ms" }
        if self < 60 { return String(format: "%.1f s", self) }
        return "\(Int(self) / 60) min \(Int(self) % 60) s"
    }
}
