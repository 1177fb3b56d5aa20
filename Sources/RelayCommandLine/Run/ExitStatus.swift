/// The command's exit statuses.
enum ExitStatus: Int32, Sendable {
    /// Everything completed.
    case success = 0
    /// Something failed, or the command could not do what it was asked.
    case failure = 1
    /// The command line or the plan is wrong; the message names the field.
    case badInput = 2
    /// The store cannot be used: missing, held by another process, damaged, unwritable, or not a folder.
    case storeError = 3
    /// Ctrl-C or SIGTERM stopped a run; running it again resumes.
    case interrupted = 130
}
