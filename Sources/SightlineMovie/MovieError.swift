import Glibc

/// What went wrong with a movie file, as one line.
package enum MovieError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A system call on the file failed (`operation` says which, `code` is errno).
    case io(path: String, operation: String, code: Int32)
    /// The bytes do not form a movie this code can read; the reason names the box.
    case malformed(String)
    /// A reader error with the file it came from.
    case unreadable(path: String, reason: String)
    /// The caller asked the writer for something it cannot write.
    case invalidInput(String)
    /// The writer already failed or finished; nothing more can be appended.
    case writerClosed(path: String)
    /// Another writer holds the file's lock: it is being recorded.
    case inUse(path: String)

    package var description: String {
        switch self {
        case .io(let path, let operation, let code):
            "\(operation) \(path) failed: \(String(cString: strerror(code)))"
        case .malformed(let reason): reason
        case .unreadable(let path, let reason): "\(path) is not a readable movie: \(reason)"
        case .invalidInput(let reason): reason
        case .writerClosed(let path): "the writer for \(path) is closed"
        case .inUse(let path): "\(path) is being recorded by another writer"
        }
    }
}
