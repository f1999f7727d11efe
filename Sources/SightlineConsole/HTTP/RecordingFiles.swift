import Hummingbird
import Logging
import NIOPosix

/// Serves recordings under `/media/<name>` through Hummingbird's `FileMiddleware`, which
/// answers range requests (a `<video>` element seeks with them), `HEAD`, and conditional
/// requests. Names go through `RecordingLibrary`, so nothing outside its directories is
/// served.
struct RecordingFiles: FileProvider {
    let library: RecordingLibrary
    private let files: LocalFileSystem

    init(library: RecordingLibrary, logger: Logger) {
        self.library = library
        var quiet = logger
        quiet.logLevel = .warning
        files = LocalFileSystem(rootFolder: "/", threadPool: .singleton, logger: quiet)
    }

    /// `path` is `/<name>`, percent-decoded; nil (404) for anything that is not a
    /// recording.
    func getFileIdentifier(_ path: String) -> String? {
        guard path.hasPrefix("/") else { return nil }
        return try? library.path(of: String(path.dropFirst()))
    }

    func getAttributes(id: String) async throws -> LocalFileSystem.FileAttributes? {
        try await files.getAttributes(id: id)
    }

    func loadFile(id: String, context: some RequestContext) async throws -> ResponseBody {
        try await files.loadFile(id: id, context: context)
    }

    func loadFile(id: String, range: ClosedRange<Int>, context: some RequestContext) async throws -> ResponseBody {
        try await files.loadFile(id: id, range: range, context: context)
    }
}
