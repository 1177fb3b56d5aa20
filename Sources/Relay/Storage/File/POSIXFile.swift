import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The few system calls a file store needs, each failing with a ``RelayError`` that names the path.
enum POSIXFile {
    static func failure(_ action: String, _ path: String, errno code: Int32 = errno) -> RelayError {
        RelayError(.storageFailure, "cannot \(action) \(path): \(String(cString: strerror(code)))")
    }

    /// Creates the folder, and its missing parents, with mode 0700; one that exists is left as it is.
    static func makeFolder(_ path: String) throws(RelayError) {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw failure("create folder", path) }
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty, parent != path else { throw failure("create folder", path) }
        try makeFolder(parent)
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw failure("create folder", path) }
    }

    static func open(_ path: String, _ flags: Int32) throws(RelayError) -> Int32 {
        while true {
            let fd = systemOpen(path, flags | O_CLOEXEC, 0o600)
            if fd >= 0 { return fd }
            if errno != EINTR { throw failure("open", path) }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(RelayError) {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw failure("write", path)
            }
            offset += written
        }
    }

    /// Writes all of `bytes` at `offset`, whatever the file's position.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws(RelayError)
    {
        var done = 0
        while done < bytes.count {
            let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if written < 0 {
                if errno == EINTR { continue }
                throw failure("write", path)
            }
            done += written
        }
    }

    /// Writes zeros from `start` to `end`.
    static func writeZeros(_ fd: Int32, from start: Int, to end: Int, path: String) throws(RelayError) {
        let zeros = [UInt8](repeating: 0, count: end - start)
        let failure = zeros.withUnsafeBytes { buffer -> RelayError? in
            do throws(RelayError) {
                try writeAll(fd, buffer, at: start, path: path)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    static func sync(_ fd: Int32, path: String) throws(RelayError) {
        if fsync(fd) != 0 { throw failure("sync", path) }
    }

    /// Syncs the file's data, and of its metadata only what reading the data back needs, such as a grown length.
    static func syncData(_ fd: Int32, path: String) throws(RelayError) {
        #if os(Linux)
            if fdatasync(fd) != 0 { throw failure("sync", path) }
        #else
            try sync(fd, path: path)
        #endif
    }

    static func syncFolder(_ path: String) throws(RelayError) {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try sync(fd, path: path)
    }

    static func truncate(_ fd: Int32, to length: Int, path: String) throws(RelayError) {
        if ftruncate(fd, off_t(length)) != 0 { throw failure("truncate", path) }
    }

    static func rename(_ from: String, to: String) throws(RelayError) {
        if Foundation.rename(from, to) != 0 { throw failure("rename", from) }
    }

    static func remove(_ path: String) throws(RelayError) {
        if unlink(path) != 0 && errno != ENOENT { throw failure("remove", path) }
    }

    static func close(_ fd: Int32) {
        _ = systemClose(fd)
    }

    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// Writes a whole file aside, syncs it, renames it into place and syncs the folder, so that a reader sees
    /// either the old file or the complete new one.
    static func replace(_ path: String, with bytes: [UInt8], folder: String) throws {
        let aside = path + ".new"
        let fd = try open(aside, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try bytes.withUnsafeBytes { buffer in try writeAll(fd, buffer, path: aside) }
            try sync(fd, path: aside)
        } catch {
            close(fd)
            throw error
        }
        close(fd)
        try rename(aside, to: path)
        try syncFolder(folder)
    }

    /// Takes the folder's lock file, or fails at once if another open store holds it.
    static func lock(_ path: String) throws(RelayError) -> Int32 {
        let fd = try open(path, O_RDWR | O_CREAT)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw RelayError(.storeLocked, "another DataPoint holds the store at \(path)")
            }
            throw failure("lock", path, errno: code)
        }
        return fd
    }
}

#if canImport(Glibc)
    private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Glibc.open(path, flags, mode) }
    private func systemClose(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#elseif canImport(Darwin)
    private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Darwin.open(path, flags, mode) }
    private func systemClose(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif
