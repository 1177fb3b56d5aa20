import Dispatch
import Foundation

/// Turns Ctrl-C (SIGINT) and SIGTERM into a call of `stop`, once, instead of ending the process, so that a run stops
/// gracefully: running calls finish within a grace period, and the store keeps the rest for the next run.
final class InterruptSignal {
    private let sources: [any DispatchSourceSignal]

    init(_ stop: @escaping @Sendable (Int32) -> Void) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop(number) }
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
