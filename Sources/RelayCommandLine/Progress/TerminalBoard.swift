import Foundation
import Relay

/// Live progress on a terminal: a bar per sequence (done of total, rate, time left), redrawn in place at most ten
/// times a second, with retries, failures and offline periods printed above the bars as they happen.
struct TerminalBoard {
    private var drawnLines = 0
    private var lastDraw: ContinuousClock.Instant?

    /// Prints a line above the bars.
    mutating func note(_ line: String, _ tally: RunTally) {
        erase()
        Output.line(line)
        draw(tally, force: true)
    }

    /// Draws the bars again, unless they were drawn less than a tenth of a second ago.
    mutating func draw(_ tally: RunTally, force: Bool = false) {
        let now = ContinuousClock.now
        if !force, let lastDraw, lastDraw.duration(to: now) < .milliseconds(100) { return }
        lastDraw = now
        erase()
        let elapsed = Date().timeIntervalSince(tally.started)
        let lines = tally.lanes.map { bar($0, elapsed: elapsed) }
        Output.raw(lines.map { $0 + "\n" }.joined())
        drawnLines = lines.count
    }

    /// Moves up over the bars drawn last and clears them.
    private mutating func erase() {
        guard drawnLines > 0 else { return }
        Output.raw(String(repeating: "\u{1B}[1A\u{1B}[2K", count: drawnLines))
        drawnLines = 0
    }

    private func bar(_ lane: RunTally.Lane, elapsed: Double) -> String {
        let width = 24
        let filled = lane.total == 0 ? width : width * lane.done / lane.total
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let rate = elapsed > 0 ? Double(lane.doneNow) / elapsed : 0
        let left = lane.total - lane.done
        let eta =
            left == 0 ? "done" : rate > 0 ? "~\((Double(left) / rate).readableSeconds) left" : "waiting"
        return "  \(lane.name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(bar) "
            + "\(lane.done)/\(lane.total)".padding(toLength: 9, withPad: " ", startingAt: 0)
            + String(format: "%5.1f/s  ", rate) + eta
    }

    /// A line for the events worth reading as they happen; `nil` for the others, which only move the bars.
    static func note(for event: CallEvent, call: String?) -> String? {
        let name = call ?? event.operationID.map { String($0.uuidString.lowercased().prefix(8)) } ?? "relay"
        switch event.kind.value {
        case .retryScheduled(let attempt, let at, let reason):
            let delay = max(0, at.timeIntervalSince(event.date)).readableSeconds
            return "  ↻ \(name): attempt \(attempt) failed (\(reason)); retrying in \(delay)"
        case .failed(let failure, _): return "  ✗ \(name) failed: \(failure)"
        case .cancelled(let reason, _): return "  ✗ \(name) cancelled: \(reason)"
        case .offline(let destination, let reason):
            return "  ⚡ \(sequence(of: event))\(destination) is offline (\(reason)); probing it"
        case .online(let destination, _): return "  ✓ \(sequence(of: event))\(destination) is back online"
        case .recovered(let report) where report.operationsRecovered > 0:
            return "  ⟳ resumed: \(report.operationsRecovered) operations recovered from the store"
        default: return nil
        }
    }

    private static func sequence(of event: CallEvent) -> String {
        event.sequenceName.map { "\($0.rawValue): " } ?? ""
    }

    /// The summary at the end of a run.
    static func summary(_ tally: RunTally, interrupted: Bool) -> String {
        let elapsed = Date().timeIntervalSince(tally.started)
        var lines = [""]
        let head = interrupted ? "Stopped" : tally.succeeded ? "Done" : "Finished with failures"
        lines.append(
            "\(head) in \(elapsed.readableSeconds): \(tally.completed) completed, \(tally.failed) failed, "
                + "\(tally.cancelled) cancelled, \(tally.skipped) skipped of \(tally.total) calls")
        if tally.finishedEarlier > 0 {
            lines.append("  \(tally.finishedEarlier) of them had finished in an earlier run")
        }
        if let p50 = tally.percentile(0.5), let p90 = tally.percentile(0.9), let p99 = tally.percentile(0.99) {
            lines.append(
                "  run time p50 \(p50.readableSeconds), p90 \(p90.readableSeconds), p99 \(p99.readableSeconds)")
        }
        if tally.retries > 0 || tally.offlinePeriods > 0 {
            lines.append(
                "  \(tally.retries) \(tally.retries == 1 ? "retry" : "retries"), \(tally.offlinePeriods) offline "
                    + (tally.offlinePeriods == 1 ? "period" : "periods"))
        }
        for failure in tally.failures.prefix(10) { lines.append("  ✗ \(failure.call): \(failure.reason)") }
        if interrupted { lines.append("  Run the same command again to resume where it stopped.") }
        return lines.joined(separator: "\n")
    }

    /// The summary as one line of JSON.
    static func summaryJSON(_ tally: RunTally, interrupted: Bool) -> String {
        var object: [String: Any] = [
            "event": "summary", "total": tally.total, "completed": tally.completed, "failed": tally.failed,
            "cancelled": tally.cancelled, "skipped": tally.skipped, "finishedEarlier": tally.finishedEarlier,
            "retries": tally.retries, "offlinePeriods": tally.offlinePeriods, "interrupted": interrupted,
            "seconds": Date().timeIntervalSince(tally.started),
        ]
        object["p50"] = tally.percentile(0.5)
        object["p90"] = tally.percentile(0.9)
        object["p99"] = tally.percentile(0.99)
        return EventLine.encode(object)
    }
}
