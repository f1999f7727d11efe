import Foundation

extension Thread {
    /// Starts `body` on a new thread that `ps -L`, `top -H` and `perf` show as `name`.
    ///
    /// The name is set from inside the thread because Foundation on Linux names only the
    /// current thread (a `name` set before `start()` never reaches the kernel), and only once
    /// `start()` has recorded which thread it created: a thread that runs first, as under
    /// load, would keep its creator's name, so it waits for that. Linux refuses a name over
    /// 15 bytes, so it is cut to the whole characters that fit.
    package static func start(
        named name: String, qualityOfService: QualityOfService = .default,
        _ body: @escaping @Sendable () -> Void
    ) {
        var bytes = 0
        let kept = String(
            name.prefix { character in
                bytes += character.utf8.count
                return bytes <= 15
            })
        let recorded = DispatchSemaphore(value: 0)
        let thread = Thread {
            recorded.wait()
            Thread.current.name = kept
            body()
        }
        thread.qualityOfService = qualityOfService
        thread.start()
        recorded.signal()
    }
}
