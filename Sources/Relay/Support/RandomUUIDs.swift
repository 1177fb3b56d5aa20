import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Random (version 4) UUIDs for new operations.
///
/// On Linux, Foundation's `UUID()` opens, reads and closes the random device for every identifier: about 4 µs each,
/// several times what running a no-op operation through a DataPoint costs. Here one read of the same device serves
/// 256 identifiers. On Darwin, `arc4random_buf` is already cheap and is used directly.
@usableFromInline
enum RandomUUIDs {
    /// A new random UUID.
    @usableFromInline
    static func next() -> UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            fill(bytes)
            // RFC 9562: version 4 in the high nibble of byte 6, variant 0b10 in the high bits of byte 8.
            bytes[6] = (bytes[6] & 0x0F) | 0x40
            bytes[8] = (bytes[8] & 0x3F) | 0x80
        }
        return UUID(uuid: uuid)
    }

    #if canImport(Darwin)
        private static func fill(_ bytes: UnsafeMutableRawBufferPointer) {
            arc4random_buf(bytes.baseAddress!, bytes.count)
        }
    #else
        private static let pool = Mutex(RandomBytes())

        private static func fill(_ bytes: UnsafeMutableRawBufferPointer) {
            pool.withLock { $0.take(into: bytes) }
        }
    #endif
}

#if !canImport(Darwin)
    /// Bytes read from the kernel's random device a page at a time, handed out once each.
    ///
    /// A child forked from a process that runs Swift concurrency cannot go on using it safely, so the buffer needs no
    /// guard against a fork copying it.
    private struct RandomBytes {
        private static let capacity = 4096

        private var buffer = [UInt8](repeating: 0, count: capacity)
        private var position = capacity
        private var device: Int32 = -1

        mutating func take(into destination: UnsafeMutableRawBufferPointer) {
            if position + destination.count > Self.capacity { refill() }
            buffer.withUnsafeBytes { source in
                destination.copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: source[position..<position + destination.count]))
            }
            position += destination.count
        }

        private mutating func refill() {
            if device < 0 { device = open("/dev/urandom", O_RDONLY | O_CLOEXEC) }
            var filled = 0
            if device >= 0 {
                filled = buffer.withUnsafeMutableBytes { bytes in
                    var count = 0
                    while count < bytes.count {
                        let got = read(device, bytes.baseAddress! + count, bytes.count - count)
                        if got > 0 {
                            count += got
                        } else if got < 0 && errno == EINTR {
                            continue
                        } else {
                            break
                        }
                    }
                    return count
                }
            }
            // Without the device (in a sandbox or a chroot, say), the standard library's generator fills the buffer.
            if filled < Self.capacity {
                var generator = SystemRandomNumberGenerator()
                buffer.withUnsafeMutableBytes { bytes in
                    for offset in stride(from: 0, to: bytes.count, by: 8) {
                        bytes.storeBytes(of: generator.next() as UInt64, toByteOffset: offset, as: UInt64.self)
                    }
                }
            }
            position = 0
        }
    }
#endif
