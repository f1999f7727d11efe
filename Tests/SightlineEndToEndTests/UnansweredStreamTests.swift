import Foundation
import FoundationNetworking
import ServiceLifecycle
import SightlineBus
import SightlineCapture
import SightlinePipeline
import SightlineSamples
import SightlineService
import Synchronization
import Testing

/// A stream that takes the connection and never says a word (a camera whose RTSP server
/// hung): `serve` opens each source beside the others and off Swift's cooperative threads,
/// so the other sources and `/health` go on meanwhile, and a shutdown gives the opening up
/// at once. The streams here wait an hour before they give up, so the tests end only if
/// nothing waits for them.
@Suite struct UnansweredStreamTests {
    @Test(.timeLimit(.minutes(5))) func streamsThatNeverAnswerHoldUpNothing() async throws {
        let silent = try SilentServer()
        // One more than Swift's cooperative threads: opened on those, they would hold them all.
        let unanswered = ProcessInfo.processInfo.activeProcessorCount + 1
        var configuration = ServicesConfiguration()
        configuration.reopenFailedSources = true
        configuration.metrics = OperationsEndpoint(host: "127.0.0.1", port: 0)
        configuration.sources = try (1...unanswered).map { index in
            .init(id: "hung\(index)", pipeline: try silent.pipeline(index), recording: nil)
        }
        var lobby = PipelineConfiguration(
            source: .media(url: SampleMedia.faces640x480.path, options: .init(realtime: true, loop: true)))
        lobby.sourceID = "lobby"
        lobby.bus.publishing = .bind(try Endpoint("inproc://unanswered-lobby"))
        lobby.detection.detectors = [.codes]
        lobby.video.mode = .off
        configuration.sources.append(.init(id: "lobby", pipeline: lobby, recording: nil))
        let port = Mutex<Int?>(nil)
        let services = try SightlineServices(configuration: configuration, logger: logger) { listening in
            port.withLock { $0 = listening }
        }
        let running = Task { try await services.run() }

        let deadline = ContinuousClock.now + .seconds(120)
        var health = ""
        let everyOneHeard = try await waitUntil(deadline) {
            silent.take()
            guard silent.connections >= unanswered,
                services.runners.last?.pipeline?.counters.framesIn ?? 0 > 30,
                let port = port.withLock({ $0 }),
                let (body, _) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health")!)
            else { return false }
            health = String(decoding: body, as: UTF8.self)
            return true
        }
        #expect(everyOneHeard, "connections \(silent.connections), health \(health)")
        let report = try JSONDecoder().decode(HealthReport.self, from: Data(health.utf8))
        #expect(
            report.sources.map(\.state) == Array(repeating: "starting", count: unanswered) + ["running"], "\(health)")
        #expect(report.status == "ok")

        running.cancel()
        try? await running.value
        #expect(services.runners.allSatisfy { $0.status.state != .failed })
    }

    enum Stop: CaseIterable { case gracefulShutdown, cancellation }

    @Test(.timeLimit(.minutes(5)), arguments: Stop.allCases) func aShutdownGivesUpTheOpening(_ stop: Stop) async throws
    {
        let silent = try SilentServer()
        let runner = SourceRunner(configuration: try silent.pipeline(1), logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [runner], logger: logger))
        let running = Task { try await group.run() }
        let opening = try await waitUntil(.now + .seconds(120)) {
            silent.take()
            return silent.connections == 1
        }
        #expect(opening)
        switch stop {
        case .gracefulShutdown: await group.triggerGracefulShutdown()
        case .cancellation: running.cancel()
        }
        // Ends with no error: a source given up as the group stops did not fail.
        await #expect(throws: Never.self) { try await running.value }
        #expect(runner.pipeline == nil && runner.status.state == .started)
    }

    private func waitUntil(_ deadline: ContinuousClock.Instant, _ condition: () async throws -> Bool) async throws
        -> Bool
    {
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}

/// A TCP listener on loopback that takes connections and never answers them.
private final class SilentServer: Sendable {
    private let listener: Int32
    private let port: UInt16
    private let accepted = Mutex<[Int32]>([])

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 64) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        try #require(listener >= 0 && bound)
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        for connection in accepted.withLock({ $0 }) { close(connection) }
        close(listener)
    }

    /// Takes the connections waiting; they stay open, unanswered.
    func take() {
        while case let connection = accept(listener, nil, nil), connection >= 0 {
            accepted.withLock { $0.append(connection) }
        }
    }

    var connections: Int { accepted.withLock { $0.count } }

    /// A source `hungN` that reads an RTSP stream here, and waits an hour for it.
    func pipeline(_ index: Int) throws -> PipelineConfiguration {
        var options = MediaFileSource.Options(realtime: true)
        options.networkTimeout = .seconds(3600)
        var configuration = PipelineConfiguration(
            source: .media(url: "rtsp://127.0.0.1:\(port)/hung", options: options))
        configuration.sourceID = "hung\(index)"
        configuration.bus.publishing = .bind(try Endpoint("inproc://unanswered-hung\(index)-\(port)"))
        configuration.detection.detectors = [.codes]
        return configuration
    }
}
