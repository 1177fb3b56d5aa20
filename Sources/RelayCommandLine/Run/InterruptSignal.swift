import Dispatch
import Foundation
import Synchronization

/// Turns Ctrl-C (SIGINT) and SIGTERM into a call of `stop` instead of ending the process.
///
/// A run then stops gracefully: running calls finish within a grace period, and the store keeps the rest for the next
/// run. A second signal calls `stopNow`, for a user who will not wait.
final class InterruptSignal {
    private final class Count: Sendable {
        let signals = Atomic(0)
    }

    private let sources: [any DispatchSourceSignal]

    init(_ stop: @escaping @Sendable (Int32) -> Void, now stopNow: @escaping @Sendable () -> Void) {
        let count = Count()
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if count.signals.add(1, ordering: .relaxed).newValue == 1 { stop(number) } else { stopNow() }
            }
            source.resume()
            return source
        }
    }

    /// Stops listening and gives the signals their default handling back.
    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
