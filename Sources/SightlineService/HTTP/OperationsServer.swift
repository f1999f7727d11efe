import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import SightlineCore
import SightlineHTTP
import SightlineMQTT

/// Where the operations endpoint listens, and who may ask.
package struct OperationsEndpoint: Sendable {
    /// Loopback unless `token` or `allowRemote`.
    package var host: String
    /// 0 picks a free port; the log line and `onListening` say which.
    package var port: Int
    /// With a token, `/metrics` needs `Authorization: Bearer TOKEN` (Prometheus's
    /// `authorization` scrape setting); `/health` stays open to probes.
    package var token: String?
    package var allowRemote = false

    package init(host: String, port: Int, token: String? = nil, allowRemote: Bool = false) {
        self.host = host
        self.port = port
        self.token = token
        self.allowRemote = allowRemote
    }

    /// `HOST:PORT`, as `--metrics` and the config file's `metrics:` give it.
    package init(listen text: String, token: String? = nil, allowRemote: Bool = false) throws {
        guard let address = ListenAddress(text) else {
            throw SightlineError.invalidArgument(
                "metrics address '\(text)' is not HOST:PORT, for example 127.0.0.1:9560")
        }
        self.init(host: address.host, port: address.port, token: token, allowRemote: allowRemote)
        try validate()
    }

    func validate() throws {
        guard ListenAddress.isLoopback(host) || token != nil || allowRemote else {
            throw SightlineError.invalidArgument(
                "metrics on \(host) lets other machines read them: give a metrics token file, or --insecure")
        }
        if let token, token.count < 16 {
            throw SightlineError.invalidArgument("the metrics token must be at least 16 characters")
        }
    }
}

/// The HTTP server operators point Prometheus and their probes at (Hummingbird):
/// `GET /metrics`, the Prometheus text exposition of every metric, brought up to date at
/// each scrape; `GET /health`, a `HealthReport` as JSON, 200 when healthy and 503 when not;
/// and each source's camera controls and latest picture (`SourceRoutes`).
package enum OperationsServer {
    package static func application(
        endpoint: OperationsEndpoint, backend: MetricsBackend, metrics: SourceMetrics, sources: [MonitoredSource],
        mqtt: MQTTOutput? = nil, logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some Service {
        let router = Router()
        let token = endpoint.token
        @Sendable func authorized(_ request: Request) -> Bool {
            guard let token else { return true }
            let presented = request.headers[.authorization].map {
                $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : ""
            }
            return presented.map { constantTimeEqual($0, token) } ?? false
        }
        router.get("/metrics") { request, _ -> Response in
            guard authorized(request) else {
                return Response(status: .unauthorized, headers: [.wwwAuthenticate: "Bearer realm=\"sightline\""])
            }
            metrics.update()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: backend.exposition())))
        }
        router.get("/health") { _, _ -> Response in
            let report = HealthReport(sources, mqtt: mqtt?.counters)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return Response(
                status: report.isHealthy ? .ok : .serviceUnavailable, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(report))))
        }
        SourceRoutes.add(to: router, sources: MonitoredSources(sources), authorized: authorized)
        let host = endpoint.host
        let application = Application(
            router: router, server: ServerLimits.standard.server(logger: logger),
            configuration: .init(address: .hostname(host, port: endpoint.port), serverName: "sightline"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.notice("metrics and health", metadata: ["url": "http://\(host):\(port)/metrics"])
                await onListening(port)
            },
            logger: logger)
        return ListeningServer(application, host: host, port: endpoint.port)
    }
}
