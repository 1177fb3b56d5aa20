/// A slot for one parked continuation, held behind one reference.
///
/// `CheckedContinuation` has a resilient layout: a struct that holds one inline has its size, and the offsets of the
/// fields after it, known only at run time, so every access to the pipeline's state on the hot path went through a
/// metadata lookup. Boxed, the slot is one pointer, and parking (which is rare) pays one allocation instead.
struct Waiter<Value: Sendable>: Sendable {
    private indirect enum Box: Sendable {
        case parked(CheckedContinuation<Value, Never>)
    }

    private var box: Box?

    init() {}

    mutating func park(_ continuation: CheckedContinuation<Value, Never>) {
        box = .parked(continuation)
    }

    /// The parked continuation, which the slot forgets.
    mutating func take() -> CheckedContinuation<Value, Never>? {
        guard case .parked(let continuation) = box else { return nil }
        box = nil
        return continuation
    }
}
