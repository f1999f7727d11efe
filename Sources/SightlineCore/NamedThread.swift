import Foundation

extension Thread {
    /// Starts `body` on a new thread that `ps -L`, `top -H` and `perf` show as `name`.
    ///
    /// The name is set from inside the thread because Foundation on Linux names only the
    /// current thread (a `name` set before `start()` never reaches the kernel). Linux keeps
    /// 15 bytes of it, so it is cut there rather than refused.
    public static func start(
        named name: String, qualityOfService: QualityOfService = .default,
        _ body: @escaping @Sendable () -> Void
    ) {
        let kept = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        let thread = Thread {
            Thread.current.name = kept
            body()
        }
        thread.qualityOfService = qualityOfService
        thread.start()
    }
}
