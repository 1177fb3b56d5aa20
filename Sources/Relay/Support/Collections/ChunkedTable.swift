/// A table of values in fixed-size chunks, so that growing never moves an existing value.
///
/// The state machine keeps its operations' slots in one and the directory each slot's id in another, both indexed by
/// slot number, so that a million slots grow without copying a million values.
struct ChunkedTable<Element: Sendable>: Sendable {
    private static var shift: Int { 12 }
    private static var chunkMask: Int { (1 << shift) - 1 }

    private var chunks: [[Element]] = []
    private(set) var count = 0

    var indices: Range<Int> { 0..<count }

    subscript(index: Int) -> Element {
        _read { yield chunks[index >> Self.shift][index & Self.chunkMask] }
        _modify { yield &chunks[index >> Self.shift][index & Self.chunkMask] }
    }

    mutating func append(_ element: Element) {
        if count & Self.chunkMask == 0 {
            var chunk: [Element] = []
            chunk.reserveCapacity(Self.chunkMask + 1)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(element)
        count += 1
    }

    mutating func removeLast() {
        chunks[chunks.count - 1].removeLast()
        count -= 1
        if count & Self.chunkMask == 0 { chunks.removeLast() }
    }
}
