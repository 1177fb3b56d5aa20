import Dispatch
import Synchronization

/// Sleeps on the system's clock for deadlines that race work, every one of them on one Dispatch timer.
///
/// Relay races deadlines against work that mostly ends first: `execute`'s deadline, a handle's timeout, an HTTP
/// attempt's timeout off the pipeline. `Task.sleep` keeps a cancelled sleep, and the memory it holds (about 700 bytes,
/// seen on Linux), until its deadline: a server sending thousands of calls a second kept minutes of them, hundreds of
/// megabytes. A Dispatch timer for each sleep lets go at once, but arming and cancelling it on Dispatch's manager
/// thread cost more than the `Task.sleep` it replaced. So every sleep is an entry in one heap behind one timer: a
/// sleep later than the earliest (nearly all of a server's) arms nothing, and a cancel takes its continuation out at
/// once, leaving a 16-byte entry that the heap sheds as it passes, or when it holds twice as many as sleep.
final class DeadlineTimer: Sendable {
    /// The process's timer.
    static let shared = DeadlineTimer()

    private struct Entry: Comparable, Sendable {
        /// On `DispatchTime`'s clock, in nanoseconds.
        let deadline: UInt64
        let id: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline < rhs.deadline }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.deadline == rhs.deadline }
    }

    private struct State {
        let timer: any DispatchSourceTimer
        var entries = MinHeap<Entry>()
        var sleepers: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var cancelledBeforeParking: Set<UInt64> = []
        /// The deadline the timer is set for.
        var armed = UInt64.max

        /// Sets the timer for the earliest sleeper's deadline, dropping the entries of sleeps that ended.
        mutating func rearm() {
            while let top = entries.min, sleepers[top.id] == nil { _ = entries.popMin() }
            let next = entries.min?.deadline ?? .max
            guard next != armed else { return }
            armed = next
            timer.schedule(deadline: next == .max ? .distantFuture : DispatchTime(uptimeNanoseconds: next))
        }
    }

    private let state: Mutex<State>

    private init() {
        state = Mutex(State(timer: DispatchSource.makeTimerSource(queue: DispatchQueue(label: "relay.deadlines"))))
        state.withLock { state in
            state.timer.setEventHandler { [weak self] in self?.fire() }
            state.timer.activate()
        }
    }

    /// Sleeps for `nanoseconds` on the monotonic clock.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first, at once.
    func sleep(nanoseconds: Int64) async throws {
        guard nanoseconds > 0 else { return try Task.checkCancellation() }
        let (deadline, overflow) = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(UInt64(nanoseconds))
        let reached = await Waiters<Bool>.wait(
            cancelled: false,
            park: { id, continuation in
                state.withLock { state in
                    if state.cancelledBeforeParking.remove(id) != nil { return false }
                    state.sleepers[id] = continuation
                    let entry = Entry(deadline: overflow ? .max - 1 : deadline, id: id)
                    state.entries.push(entry)
                    if entry.deadline < state.armed {
                        state.rearm()
                    } else if state.entries.count > 2 * state.sleepers.count + 64 {
                        state.entries = MinHeap(state.entries.elements.filter { state.sleepers[$0.id] != nil })
                    }
                    return nil
                }
            },
            cancel: { [self] id in
                state.withLock { state in
                    guard let continuation = state.sleepers.removeValue(forKey: id) else {
                        state.cancelledBeforeParking.insert(id)
                        return nil
                    }
                    return continuation
                }
            },
            forget: { id in state.withLock { _ = $0.cancelledBeforeParking.remove(id) } }
        )
        if !reached { throw CancellationError() }
    }

    /// Resumes every sleeper whose deadline has passed, and sets the timer for the next.
    private func fire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            var due: [CheckedContinuation<Bool, Never>] = []
            while let top = state.entries.min, top.deadline <= now {
                _ = state.entries.popMin()
                if let continuation = state.sleepers.removeValue(forKey: top.id) { due.append(continuation) }
            }
            state.armed = .max
            state.rearm()
            return due
        }
        for continuation in due { continuation.resume(returning: true) }
    }
}
