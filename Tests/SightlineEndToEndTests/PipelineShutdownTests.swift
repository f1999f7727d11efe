import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCore
import SightlinePipeline
import SightlineSamples
import SightlineTesting
import Testing

/// A pipeline's parts are a service group of their own: a graceful shutdown from the group
/// it runs in, and cancelling its task, both end a source that never ends by itself, and
/// both leave the stream complete: the objects in view leave after the last objects
/// message, and the final status comes last, with the counters.
@Suite struct PipelineShutdownTests {
    enum Stop: CaseIterable { case gracefulShutdown, cancellation }

    @Test(.timeLimit(.minutes(5)), arguments: Stop.allCases) func aLiveSourceStopsWithEverythingSaid(_ stop: Stop)
        async throws
    {
        let endpoint = try Endpoint("inproc://shutdown-\(stop)")
        var configuration = PipelineConfiguration(
            source: .media(url: SampleMedia.faces640x480.path, options: .init(realtime: true, loop: true)))
        configuration.bus.publishing = .bind(endpoint)
        configuration.bus.waitForSubscriber = .seconds(20)
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: [.status, .faces, .events], source: "cam1"))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [pipeline], logger: logger))
        let running = Task { try await group.run() }

        // Faces in view. (Not `collect`, which listens on while messages come: a live source
        // never goes quiet.)
        var messages: [ReceivedMessage] = []
        try await onAThreadOfItsOwn {
            while !messages.contains(where: { $0.message.faces?.isEmpty == false }) {
                if let message = try subscriber.receive(timeout: .seconds(120)) {
                    messages.append(message)
                } else {
                    Issue.record("no faces in 120 s")
                    return
                }
            }
        }
        switch stop {
        case .gracefulShutdown: await group.triggerGracefulShutdown()
        case .cancellation: running.cancel()
        }
        try? await running.value
        messages += try await onAThreadOfItsOwn {
            try subscriber.collect(timeout: .seconds(60)) { $0.last?.message.status?.state == .stopped }
        }
        let all = messages.map(\.message)
        let final = try #require(all.last?.status)
        #expect(final.state == .stopped && final.reason == "stopped")
        #expect(final.counters == pipeline.finalCounters)
        #expect((final.counters?.framesIn ?? 0) > 0)
        let events = all.compactMap(\.event)
        let entered = Set(events.filter { $0.change == .enter }.map(\.id))
        let left = Set(events.filter { $0.change == .leave }.map(\.id))
        #expect(!entered.isEmpty && left == entered)
        // The outputs finished before the final status: the last objects message is the
        // empty one that says they have gone.
        #expect(all.last { $0.kind == .faces }?.faces == [])
        #expect(all.filter { $0.status?.state == .stopped }.count == 1)
    }
}
