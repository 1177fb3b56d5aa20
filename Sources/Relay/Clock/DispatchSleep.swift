import Dispatch
import Synchronization

/// A sleep on the system's clock, on a Dispatch timer that a cancel releases at once.
///
/// `Task.sleep` leaves a cancelled sleep in place, with the memory it holds (about 700 bytes, seen on Linux), until
/// its deadline passes. Relay races deadlines against work that mostly ends first, as an HTTP attempt's timeout or
/// `execute`'s deadline: a server sending thousands of calls a second kept minutes of them, hundreds of megabytes. A
/// cancelled Dispatch timer goes as it is cancelled.
enum DispatchSleep {
    private enum State {
        case waiting
        case sleeping(any DispatchSourceTimer, CheckedContinuation<Void, any Error>)
        case over
    }

    /// What the timer, the waiting task and a cancel share; whichever comes first ends the sleep.
    private final class Sleep: Sendable {
        private let state = Mutex<State>(.waiting)

        /// Starts the timer, unless the sleep is already over; returns whether it started.
        func start(after nanoseconds: Int64, _ continuation: CheckedContinuation<Void, any Error>) -> Bool {
            state.withLock { current in
                guard case .waiting = current else { return false }
                let timer = DispatchSource.makeTimerSource(queue: .global())
                timer.schedule(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds)), leeway: .nanoseconds(0))
                timer.setEventHandler { [self] in end()?.resume() }
                timer.activate()
                current = .sleeping(timer, continuation)
                return true
            }
        }

        /// Ends the sleep, once: cancels its timer, and returns its continuation if it still waits.
        func end() -> CheckedContinuation<Void, any Error>? {
            state.withLock { current in
                defer { current = .over }
                guard case .sleeping(let timer, let continuation) = current else { return nil }
                timer.cancel()
                return continuation
            }
        }
    }

    /// Sleeps for `nanoseconds` on the monotonic clock.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first, at once.
    static func sleep(nanoseconds: Int64) async throws {
        guard nanoseconds > 0 else { return try Task.checkCancellation() }
        let sleep = Sleep()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if !sleep.start(after: nanoseconds, continuation) { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            sleep.end()?.resume(throwing: CancellationError())
        }
    }
}
