import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineMQTT
import SightlinePipeline
import SightlineRecorder

/// What to run in one process: sources to analyse, recordings to make, how they meet on the
/// bus, retention, and the metrics endpoint. `run` gives one source, `record` one recording
/// of a source published elsewhere, `serve` many of both from a config file.
package struct ServicesConfiguration: Sendable {
    package struct Source: Sendable {
        package var id: String
        /// Analyse the source in this process; nil: it is published elsewhere (`record`).
        package var pipeline: PipelineConfiguration?
        /// Record it in this process; nil: do not.
        package var recording: RecorderConfiguration?

        package init(id: String, pipeline: PipelineConfiguration?, recording: RecorderConfiguration?) {
            self.id = id
            self.pipeline = pipeline
            self.recording = recording
        }
    }

    /// How sources and in-process subscribers (recorders) meet.
    package enum Bus: Sendable {
        /// Each pipeline binds its own `publish` endpoint and an inproc one for this
        /// process's recorder (`run`).
        case perSource
        /// Every source through an in-process broker whose backend binds one endpoint
        /// (`serve`); with `curve`, subscribers need an allowed key.
        case shared(publish: Endpoint, allowRemote: Bool, curve: CurveServer?)
        /// Every source through an in-process broker connected to another broker's frontend,
        /// as one source would be (`serve` with `publish-to`).
        case broker(frontend: Endpoint, curve: CurveClient?)
        /// Recorders subscribe to sources published by other processes (`record`).
        case remote([Endpoint], curve: CurveClient?)
    }

    package var sources: [Source] = []
    package var bus = Bus.perSource
    /// Open a failed source again, with backoff, instead of ending (`serve`).
    package var reopenFailedSources = false
    /// Recorders end once their source has published its final status (`record --until-stopped`).
    package var recordUntilSourceStops = false
    /// A limit over every source's recordings together, beside each source's own.
    package var overallRetention = RetentionPolicy()
    /// Serve `/metrics` and `/health` here; nil: no metrics.
    package var metrics: OperationsEndpoint?
    /// Publish events, counts and statuses to an MQTT broker; nil: do not.
    package var mqtt: MQTTConfiguration?

    package init() {}
}

/// Turns a `ServicesConfiguration` into running services, the same way for every command:
/// a pipeline and a recorder per source, the bus between them, shared retention, metrics
/// and health. `init` checks everything and opens `run`'s source, so bad input fails before
/// anything runs (`serve`'s sources open as their services start, each beside the others);
/// `run()` runs them as one swift-service-lifecycle group until the sources end or SIGINT
/// or SIGTERM, which finalises every recording.
package final class SightlineServices: Sendable {
    package let configuration: ServicesConfiguration
    package let runners: [SourceRunner]
    package let recorders: [RecorderService]
    package let monitored: [MonitoredSource]
    package let mqtt: MQTTOutput?
    /// Where this process's own subscribers (recorders, the console) get every source of
    /// a shared bus (`serve`).
    package let localEndpoint: Endpoint
    /// Where this process's own subscribers get each source it analyses: its own inproc
    /// endpoint (`run`), or `localEndpoint`.
    package let localEndpoints: [String: Endpoint]
    private let broker: Broker?
    private let operations: (any Service)?
    private let logger: Logger

    /// `onMetricsListening` gets the metrics port once it accepts connections.
    package init(
        configuration: ServicesConfiguration, logger: Logger,
        onMetricsListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        self.configuration = configuration
        self.logger = logger
        // Pipelines make their metrics as they open: the backend must be there first.
        if configuration.metrics != nil { _ = MetricsBackend.shared }
        let local = try Endpoint("inproc://sightline-services")
        localEndpoint = local
        let frontend = try Endpoint("inproc://sightline-services-frontend")
        switch configuration.bus {
        case .shared(let publish, let allowRemote, let curve):
            broker = try Broker(
                frontend: frontend, backend: publish, alsoBindBackend: [local], allowRemote: allowRemote, curve: curve)
        case .broker(let upstream, let curve):
            broker = try Broker(frontend: frontend, backend: local, upstream: upstream, upstreamCurve: curve)
        case .perSource, .remote:
            broker = nil
        }
        try broker?.start()

        var runners: [SourceRunner] = []
        var recorders: [RecorderService] = []
        var monitored: [MonitoredSource] = []
        var localEndpoints: [String: Endpoint] = [:]
        // One retention for every recorder, each source's rule and the overall one under one
        // lock, so two recorders never pick the same file.
        let recordings = configuration.sources.compactMap(\.recording)
        let retention = RecordingRetention(
            rules: recordings.map { RecordingRetention.Rule($0.retention, for: $0) } + [
                RecordingRetention.Rule(
                    policy: configuration.overallRetention,
                    directories: Array(Set(recordings.map(\.directory))).sorted(), sourceID: nil)
            ], logger: logger)
        for source in configuration.sources {
            var pipeline = source.pipeline
            var recorderEndpoints: [Endpoint] = [local]
            var recorderCurve: CurveClient?
            if pipeline != nil {
                switch configuration.bus {
                case .perSource:
                    let own = try Endpoint("inproc://sightline-\(source.id)")
                    pipeline?.bus.alsoPublish.append(own)
                    recorderEndpoints = [own]
                case .shared, .broker, .remote:
                    pipeline?.bus.publishing = .broker(frontend)
                }
                localEndpoints[source.id] = recorderEndpoints[0]
            } else if case .remote(let endpoints, let curve) = configuration.bus {
                (recorderEndpoints, recorderCurve) = (endpoints, curve)
            }
            // The recorder before the source, which binds the bus as `run` opens it: a
            // directory that cannot be written to is the error reported, not a busy port.
            let recorder = try source.recording.map { recording in
                try RecorderService(
                    configuration: recording, endpoints: recorderEndpoints, curve: recorderCurve,
                    untilSourceStops: configuration.recordUntilSourceStops, retention: retention,
                    announcesWaiting: pipeline == nil, logger: logger)
            }
            let runner = try pipeline.map {
                try Self.runner($0, reopen: configuration.reopenFailedSources, logger: logger)
            }
            runners += runner.map { [$0] } ?? []
            recorders += recorder.map { [$0] } ?? []
            monitored.append(
                MonitoredSource(
                    id: source.id, runner: runner, recorder: recorder, recordingDirectory: source.recording?.directory))
        }
        self.runners = runners
        self.recorders = recorders
        self.monitored = monitored
        self.localEndpoints = localEndpoints
        // One connection for every source of the process, wherever this process's own
        // subscribers get them.
        let ownSources = Array(Set(localEndpoints.values)).sorted { "\($0)" < "\($1)" }
        let mqttEndpoints = broker != nil ? [local] : ownSources
        let galleries = configuration.sources.compactMap { $0.pipeline?.detection.identities?.gallery }
        let enrolled = galleries.isEmpty ? nil : Array(Set(galleries.flatMap { $0.people.map(\.name) })).sorted()
        mqtt = try configuration.mqtt.map {
            try MQTTOutput(configuration: $0, endpoints: mqttEndpoints, enrolled: enrolled, logger: logger)
        }
        if let endpoint = configuration.metrics {
            let backend = MetricsBackend.shared
            let metrics = SourceMetrics(sources: monitored, retention: retention, mqtt: mqtt)
            operations = OperationsServer.application(
                endpoint: endpoint, backend: backend, metrics: metrics, sources: monitored, mqtt: mqtt,
                logger: logger, onListening: onMetricsListening)
        } else {
            operations = nil
        }
    }

    /// `run` opens the source now, so that its errors end the command before anything runs;
    /// `serve`'s sources open when their services run, each beside the others.
    private static func runner(_ pipeline: PipelineConfiguration, reopen: Bool, logger: Logger) throws
        -> SourceRunner
    {
        guard !reopen else { return SourceRunner(configuration: pipeline, logger: logger) }
        return SourceRunner(pipeline: try AnalysisPipeline(configuration: pipeline, logger: logger), logger: logger)
    }

    /// Runs every service until the sources end (`run`, `record --until-stopped`) or SIGINT or
    /// SIGTERM, then shuts them down gracefully: sources first, so recorders and printers
    /// still get their final status, then the recorders, which finalise their files, and
    /// the metrics endpoint last. `extra`: more subscribers of this process (`run --print`),
    /// stopped after the sources.
    /// The running sources, as the console beside the operations server offers them.
    package var runningSources: MonitoredSources { MonitoredSources(monitored) }

    package func run(extra: [any Service] = []) async throws {
        // Recorders and printers in this process subscribe before the first key frame.
        if !recorders.isEmpty || !extra.isEmpty || mqtt != nil {
            for runner in runners { runner.waitForSubscribers() }
        }
        // A source that ends stops a `run`; in `serve` the others go on.
        let sourceEnds: ServiceGroupConfiguration.ServiceConfiguration.TerminationBehavior =
            configuration.reopenFailedSources ? .ignore : .gracefullyShutdownGroup
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let operations { services.append(.init(service: operations)) }
        services += recorders.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) }
        services += extra.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup) }
        if let mqtt { services.append(.init(service: mqtt, successTerminationBehavior: .gracefullyShutdownGroup)) }
        // A source `serve` cannot run (its configuration, found wrong as it opened) stops the
        // others as SIGTERM does, so that what they recorded is finished.
        let sourceFails: ServiceGroupConfiguration.ServiceConfiguration.TerminationBehavior =
            configuration.reopenFailedSources ? .gracefullyShutdownGroup : .cancelGroup
        services += runners.map {
            .init(service: $0, successTerminationBehavior: sourceEnds, failureTerminationBehavior: sourceFails)
        }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        defer { broker?.stop() }
        try await group.run()
        // The final statuses reach remote subscribers before the process exits.
        for runner in runners { await runner.pipeline?.publisher.close() }
    }
}
