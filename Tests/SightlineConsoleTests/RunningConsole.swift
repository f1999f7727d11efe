import Foundation
import Logging
import ServiceLifecycle
import SightlineConsole

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real console (HTTP server and bus subscriber) on a free loopback port for one test.
struct RunningConsole {
    let base: String
    let console: Console

    static func with(
        _ configuration: ConsoleConfiguration, _ body: (RunningConsole) async throws -> Void
    ) async throws {
        var configuration = configuration
        configuration.port = 0
        let (ports, announce) = AsyncStream.makeStream(of: Int.self)
        let console = try Console(
            configuration: configuration, logger: Logger(label: "console-test"), onListening: { announce.yield($0) })
        let group = ServiceGroup(
            configuration: .init(services: console.services, logger: Logger(label: "console-test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { return }
            do {
                try await body(RunningConsole(base: "http://127.0.0.1:\(port)", console: console))
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
        var json: Any? { try? JSONSerialization.jsonObject(with: body) }
    }

    /// A POST without a body.
    func post(_ path: String) async throws -> Reply { try await get(path, method: "POST") }

    /// A GET with `headers`, not following redirects.
    func get(_ path: String, headers: [String: String] = [:], method: String = "GET") async throws -> Reply {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        // Wait for the reply, not for URLSession's fixed 60 s: on a loaded 2-core machine the
        // cooperative threads that run the server's handlers and this continuation can be
        // held for minutes by other suites' long synchronous loops (a whole run under load
        // lost five requests that way).
        request.timeoutInterval = 900
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields["\(name)".lowercased()] = "\(value)" }
        return Reply(status: http.statusCode, headers: fields, body: data)
    }
}
