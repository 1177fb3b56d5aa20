/// A slot for one parked continuation, held behind one reference.
///
/// `CheckedContinuation` has a resilient layout: a struct that holds one inline has its size, and the offsets of the
/// fields after it, known only at run time, so every access to it goes through a metadata lookup. The pipeline's state
/// machine, its lanes and an event subscription's buffer are read on every operation or event; boxed, the slot is one
/// pointer, and parking, which is rarer, pays one allocation instead.
struct ContinuationSlot<Value: Sendable>: Sendable {
    private indirect enum Box: Sendable {
        case parked(CheckedContinuation<Value, Never>)
    }

    private var box: Box?

    init() {}

    var isEmpty: Bool {
        guard case .some = box else { return true }
        return false
    }

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
