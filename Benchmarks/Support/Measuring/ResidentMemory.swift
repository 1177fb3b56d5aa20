import Foundation

#if canImport(Glibc)
    import Glibc

    /// The process's resident memory, from `/proc/self/status` (Linux only).
    public enum ResidentMemory {
        /// The resident memory now, in bytes.
        public static func current() -> Int {
            kilobytes("VmRSS:") * 1024
        }

        /// Runs `body` and returns the peak resident memory while it ran, in bytes.
        ///
        /// Free heap memory goes back to the system first, and the kernel's high-water mark restarts from what is
        /// resident then (writing 5 to `/proc/self/clear_refs`).
        public static func peak(during body: () async throws -> Void) async throws -> Int {
            returnFreeMemory()
            try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            try await body()
            return kilobytes("VmHWM:") * 1024
        }

        /// glibc's `malloc_trim(0)`, which Swift's Glibc module does not export: free heap memory goes back to the
        /// system, so that one workload's leftovers do not count toward the next one's peak.
        public static func returnFreeMemory() {
            typealias Trim = @convention(c) (Int) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        }

        private static func kilobytes(_ field: String) -> Int {
            guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
                let value = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
            else { fatalError("no \(field) in /proc/self/status") }
            return value
        }
    }
#endif
