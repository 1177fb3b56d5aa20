/// The destinations a lane could not reach, the operations that wait for each, and the probes that end the wait.
///
/// An operation whose attempt came back offline waits here, its attempt given back, until a probe of its destination
/// answers; the lane's other destinations go on. Probes are timed on the clock: the first a quarter of a second after
/// the destination went offline, then twice as far apart, up to 30 seconds. A probe that falls due becomes the next
/// job of one of the lane's workers.
///
/// A probe that answers at its first try, while the operation it let go comes back offline again, counts a strike
/// against each operation that waited: past ``freeRounds`` strikes, an operation's offline outcomes spend attempts
/// like other failures, so a destination that answers probes but drops every call cannot hold an operation forever.
struct OfflineDestinations: Sendable {
    /// How many rounds of a probe answering at its first try an operation waits out before its offline outcomes
    /// spend attempts.
    static let freeRounds = 3
    static let firstProbeDelay = Duration.milliseconds(250).relayNanoseconds
    static let longestProbeDelay = Duration.seconds(30).relayNanoseconds

    /// What a probe's end asks of the lane.
    enum ProbeEnd: Sendable, Equatable {
        /// The destination answered: these operations wait no more.
        case online(released: [Int32])
        /// It did not: the next probe sends `subject` later.
        case offline(subject: Int32)
        /// Nothing waits for the destination any more.
        case forgotten
    }

    private struct Destination: Sendable {
        /// Why it is offline, naming it.
        var reason: String
        /// When it went offline, on the clock.
        var since: Int64
        var executor: any CallExecutor
        /// The waiting operations in the order they came; the first is the one a probe sends.
        var waiting: [Int32]
        var nextProbe: Int64
        var delay: Int64
        var probeDue = false
        var prober: UInt64?
        /// Whether a probe has failed since the destination went offline.
        var probeFailed = false
    }

    private var destinations: [String: Destination] = [:]
    /// The destination each waiting operation waits for.
    private var parked: [Int32: String] = [:]
    private var strikes: [Int32: Int] = [:]
    private(set) var dueProbes = 0

    /// Whether every destination of the lane answers.
    var isEmpty: Bool { destinations.isEmpty }

    /// How many operations wait for a destination.
    var waitingCount: Int { parked.count }

    /// Whether a worker is probing.
    var isProbing: Bool { destinations.values.contains { $0.prober != nil } }

    /// The workers that are probing.
    var probers: [UInt64] { destinations.values.compactMap(\.prober) }

    /// Every offline destination's reason, or `nil` when all answer.
    var summary: String? {
        destinations.isEmpty
            ? nil : destinations.keys.sorted().compactMap { destinations[$0]?.reason }.joined(separator: "; ")
    }

    func isOffline(_ destination: String) -> Bool {
        destinations[destination] != nil
    }

    /// Why the operation waits, naming its destination, and since when; `nil` when it does not wait for one.
    func reason(of slot: Int32) -> (reason: String, since: Int64)? {
        parked[slot].flatMap { destinations[$0] }.map { ($0.reason, $0.since) }
    }

    func isWaiting(_ slot: Int32) -> Bool {
        !parked.isEmpty && parked[slot] != nil
    }

    /// How many rounds the operation has waited out while its destination's probe answered at once.
    func strikes(of slot: Int32) -> Int {
        strikes.isEmpty ? 0 : strikes[slot] ?? 0
    }

    /// Makes the operation wait for `destination`; returns whether the destination was online until now.
    mutating func park(
        _ slot: Int32, at destination: String, reason: String, executor: any CallExecutor, now: Int64
    ) -> Bool {
        parked[slot] = destination
        if destinations[destination] != nil {
            destinations[destination]?.waiting.append(slot)
            return false
        }
        let named = reason.hasPrefix(destination) ? reason : "\(destination): \(reason)"
        destinations[destination] = Destination(
            reason: named, since: now, executor: executor, waiting: [slot], nextProbe: now &+ Self.firstProbeDelay,
            delay: Self.firstProbeDelay)
        return true
    }

    /// When the operation's destination is next probed, if the operation is the one the probe sends and no probe is
    /// due or running.
    func nextProbe(sending slot: Int32) -> Int64? {
        guard let name = parked[slot], let destination = destinations[name], destination.waiting.first == slot,
            !destination.probeDue, destination.prober == nil
        else { return nil }
        return destination.nextProbe
    }

    /// Marks the probe of the operation's destination due.
    mutating func probeFellDue(sending slot: Int32) {
        guard let name = parked[slot], destinations[name]?.probeDue == false else { return }
        destinations[name]?.probeDue = true
        dueProbes += 1
    }

    /// Gives a due probe to `worker`: the destination, its executor, and the operation to send.
    mutating func takeDueProbe(for worker: UInt64) -> (destination: String, executor: any CallExecutor, slot: Int32)? {
        guard dueProbes > 0, let (name, destination) = destinations.first(where: { $0.value.probeDue }) else {
            return nil
        }
        dueProbes -= 1
        destinations[name]?.probeDue = false
        destinations[name]?.prober = worker
        return (name, destination.executor, destination.waiting[0])
    }

    /// A probe ended.
    mutating func probeEnded(_ name: String, by worker: UInt64, answered: Bool, now: Int64) -> ProbeEnd {
        guard var destination = destinations[name], destination.prober == worker else { return .forgotten }
        destination.prober = nil
        if answered {
            destinations[name] = nil
            for slot in destination.waiting {
                parked[slot] = nil
                if !destination.probeFailed { strikes[slot, default: 0] += 1 }
            }
            return .online(released: destination.waiting)
        }
        destination.probeFailed = true
        destination.delay = min(destination.delay * 2, Self.longestProbeDelay)
        destination.nextProbe = now &+ destination.delay
        destinations[name] = destination
        return .offline(subject: destination.waiting[0])
    }

    /// The operation ended, or waits no more; returns its destination when nothing waits for it any more, and the
    /// operation that its probe now sends when the ended one was that.
    mutating func leave(_ slot: Int32) -> (emptied: String?, nextSubject: Int32?) {
        if !strikes.isEmpty { strikes[slot] = nil }
        guard !parked.isEmpty, let name = parked.removeValue(forKey: slot), var destination = destinations[name] else {
            return (nil, nil)
        }
        let wasSubject = destination.waiting.first == slot
        destination.waiting.removeAll { $0 == slot }
        guard let first = destination.waiting.first else {
            if destination.probeDue { dueProbes -= 1 }
            destinations[name] = nil
            return (name, nil)
        }
        destinations[name] = destination
        return (nil, wasSubject ? first : nil)
    }

    /// Replaces every executor, as the DataPoint lets go of them.
    mutating func replaceExecutors(with executor: any CallExecutor) {
        for name in destinations.keys { destinations[name]?.executor = executor }
    }
}
