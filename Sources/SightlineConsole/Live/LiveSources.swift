import Foundation
import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCore
import SightlineMovie
import Synchronization

/// A source as the console's pages and API show it.
package struct LiveSourceSummary: Sendable, Codable, Equatable {
    package enum State: String, Sendable, Codable { case running, interrupted, stopped, failed }
    package var id: String
    package var state: State
    /// Why it is interrupted, stopped or failed.
    package var reason: String?
    package var input: InputDescription?
    package var detections: [String]
    package var counters: PipelineCounters?
    /// Frames pushed to live viewers, and when the last message came (ns since 1970).
    package var liveFrames: Int
    package var lastMessageNs: UInt64
}

/// The console's bus subscriber: follows every source's status, and pairs each source's
/// live frames (`frames`, JPEG) with the faces and codes of the same frame for viewers.
///
/// ZeroMQ is read on a thread of its own, so a blocking receive never holds one of Swift's
/// few cooperative threads; viewers get what it finds through `AsyncStream`s. A source that
/// sends nothing for `silenceLimit` shows as stopped until it speaks again.
package final class LiveSources: Service, Sendable {
    private struct SourceEntry {
        var summary: LiveSourceSummary
        var matcher = LiveFrameMatcher()
        var video = LiveVideo()
    }

    private struct Watcher {
        let source: String?
        var frames: AsyncStream<LiveFrame>.Continuation? = nil
        var summaries: AsyncStream<[LiveSourceSummary]>.Continuation? = nil
        var video: AsyncStream<[UInt8]>.Continuation? = nil
        var objects: AsyncStream<LiveObjects>.Continuation? = nil
        /// A video viewer has had the stream's initialization segment.
        var started = false
    }

    private struct State {
        var sources: [String: SourceEntry] = [:]
        var watchers: [UInt64: Watcher] = [:]
        var nextWatcher: UInt64 = 0
        var finished = false
        /// How many watch each source's video, kept as watchers come and go: the bus thread
        /// reads it for every message.
        var videoViewers: [String: Int] = [:]
        /// How many watch each source's objects: none, and no message is drawn for them.
        var objectViewers: [String: Int] = [:]

        mutating func count(_ watcher: Watcher, by change: Int) {
            guard let source = watcher.source else { return }
            if watcher.video != nil { videoViewers[source, default: 0] += change }
            if watcher.objects != nil { objectViewers[source, default: 0] += change }
            if videoViewers[source] == 0 { videoViewers[source] = nil }
            if objectViewers[source] == 0 { objectViewers[source] = nil }
        }
    }

    private let endpoints: [Endpoint]
    private let curve: CurveClient?
    private let logger: Logger
    private let state = Mutex(State())
    private let silenceLimit: Duration
    private let onEvent: @Sendable (ObjectEvent, _ source: String, _ wallTimeNs: UInt64) -> Void

    /// `onEvent` gets each object event, on the bus thread, in the order they come.
    package init(
        endpoints: [Endpoint], curve: CurveClient?, silenceLimit: Duration = .seconds(15), logger: Logger,
        onEvent: @escaping @Sendable (ObjectEvent, _ source: String, _ wallTimeNs: UInt64) -> Void = { _, _, _ in }
    ) {
        self.endpoints = endpoints
        self.curve = curve
        self.silenceLimit = silenceLimit
        self.logger = logger
        self.onEvent = onEvent
    }

    /// The console is stopping: streams asked for now end at once.
    package var isFinished: Bool { state.withLock { $0.finished } }

    /// Every source seen, by ID.
    package var summaries: [LiveSourceSummary] {
        state.withLock { $0.sources.values.map(\.summary) }.sorted { $0.id < $1.id }
    }

    /// Frames of `source` with their objects, as they are matched, until the viewer goes
    /// away or the console stops. The newest frame wins when a viewer falls behind.
    package func frames(of source: String) -> AsyncStream<LiveFrame> {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveFrame.self, bufferingPolicy: .bufferingNewest(2))
        addWatcher(Watcher(source: source, frames: continuation), continuation)
        return stream
    }

    /// The source's own H.264 as fragmented MP4 (`StreamingMovie`): the initialization
    /// segment, the fragments since the last key frame, then each one as it comes. The
    /// console subscribes to the source's video while anyone watches it (a source publishes
    /// video on demand). The stream ends when the source starts a new one (the viewer starts
    /// again), or when the viewer falls `backlog` fragments behind: a player cannot skip
    /// fragments, so it reconnects at the newest key frame instead.
    package func video(of source: String, backlog: Int = 300) -> AsyncStream<[UInt8]> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: [UInt8].self, bufferingPolicy: .bufferingOldest(backlog))
        addWatcher(Watcher(source: source, video: continuation), continuation)
        return stream
    }

    /// Every object message of the source, and the media and capture time of each of its
    /// video frames: what the grid draws over the presented frame.
    package func objects(of source: String) -> AsyncStream<LiveObjects> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: LiveObjects.self, bufferingPolicy: .bufferingNewest(512))
        addWatcher(Watcher(source: source, objects: continuation), continuation)
        return stream
    }

    /// The source list now and every time a status changes.
    package func summaryUpdates() -> AsyncStream<[LiveSourceSummary]> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: [LiveSourceSummary].self, bufferingPolicy: .bufferingNewest(1))
        continuation.yield(summaries)
        addWatcher(Watcher(source: nil, summaries: continuation), continuation)
        return stream
    }

    private func addWatcher<Element>(_ watcher: Watcher, _ continuation: AsyncStream<Element>.Continuation) {
        let id: UInt64? = state.withLock { state in
            guard !state.finished else { return nil }
            state.nextWatcher += 1
            var watcher = watcher
            if let video = watcher.video, let source = watcher.source, let entry = state.sources[source],
                let movie = entry.video.movie, !entry.video.sinceKeyFrame.isEmpty
            {
                // Playing at once: from the last key frame.
                video.yield(movie.initialization)
                for fragment in entry.video.sinceKeyFrame { video.yield(fragment) }
                watcher.started = true
            }
            state.watchers[state.nextWatcher] = watcher
            state.count(watcher, by: 1)
            return state.nextWatcher
        }
        guard let id else { return continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                if let watcher = state.watchers.removeValue(forKey: id) { state.count(watcher, by: -1) }
            }
        }
    }

    package func run() async throws {
        guard !endpoints.isEmpty else {
            // Recordings only: nothing to read, but the service lives as long as the group.
            try? await gracefulShutdown()
            return finishWatchers()
        }
        // The subscriber lives on the bus thread: it is not thread-safe. A graceful shutdown
        // signals `stop`, which ends the thread's receive at once.
        let stop = try WakeUp()
        let failure = Mutex<(any Error)?>(nil)
        await withGracefulShutdownHandler {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.start(named: "console-bus") { [self] in
                    do {
                        let subscriber = try Subscriber(
                            endpoints: endpoints,
                            topics: Subscriber.topics(
                                kinds: [.status, .frames, .events] + ObjectKind.all.map(\.messageKind), source: nil),
                            curve: curve)
                        subscriber.logRejections(to: logger)
                        receive(from: subscriber, until: stop)
                        subscriber.close()
                    } catch {
                        failure.withLock { $0 = error }
                    }
                    done.resume()
                }
            }
        } onGracefulShutdown: {
            stop.signal()
        }
        finishWatchers()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func finishWatchers() {
        let watchers = state.withLock { state in
            state.finished = true
            defer { (state.watchers, state.videoViewers, state.objectViewers) = ([:], [:], [:]) }
            return Array(state.watchers.values)
        }
        for watcher in watchers {
            watcher.frames?.finish()
            watcher.summaries?.finish()
            watcher.video?.finish()
            watcher.objects?.finish()
        }
    }

    private func receive(from subscriber: Subscriber, until stop: WakeUp) {
        // Each source whose video the console subscribes to, and when a viewer last wanted it.
        var watchedVideo: [String: UInt64] = [:]
        while !stop.isSignalled {
            updateVideoSubscriptions(subscriber, &watchedVideo, nowNs: WallClock.nowNanoseconds())
            let received: ReceivedMessage?
            do {
                // 20 ms: frames waiting for their objects are released on time (`tick`).
                received = try subscriber.receive(timeout: .milliseconds(20), wakingOn: stop)
            } catch {
                logger.error("the console cannot read the bus: \(error)")
                return
            }
            let now = WallClock.nowNanoseconds()
            if let received { handle(received, receivedNs: now) }
            tick(nowNs: now)
        }
    }

    /// Video only of sources someone watches (a source publishes it only on demand, and may
    /// encode it for that), kept 10 s after the last viewer leaves so a page that reconnects
    /// finds the stream unbroken. A stream let go is forgotten: when it comes back it starts
    /// at a later key frame, and what was held would leave a gap.
    private func updateVideoSubscriptions(_ subscriber: Subscriber, _ watched: inout [String: UInt64], nowNs: UInt64) {
        let wanted = state.withLock { $0.videoViewers }
        for source in wanted.keys {
            if watched[source] == nil { subscriber.subscribe(Topic.make(kind: .video, source: source)) }
            watched[source] = nowNs
        }
        for (source, lastWanted) in watched where nowNs > lastWanted + 10_000_000_000 {
            subscriber.unsubscribe(Topic.make(kind: .video, source: source))
            watched[source] = nil
            state.withLock { $0.sources[source]?.video.reset() }
        }
    }

    private func handle(_ received: ReceivedMessage, receivedNs: UInt64) {
        let message = received.message
        if let event = message.event, message.kind == .events {
            onEvent(event, message.source, message.wallTimeNs == 0 ? receivedNs : message.wallTimeNs)
        }
        var statusChanged = false
        // Streams to end once the lock is let go (ending one runs its termination handler,
        // which takes the lock).
        var ended: [AsyncStream<[UInt8]>.Continuation] = []
        let frames: [LiveFrame] = state.withLock { state in
            var entry =
                state.sources[message.source]
                ?? SourceEntry(
                    summary: LiveSourceSummary(
                        id: message.source, state: .running, detections: [], liveFrames: 0, lastMessageNs: receivedNs))
            if entry.summary.state == .stopped && message.kind != .status {
                // A source that went quiet or stopped is back.
                entry.summary.state = .running
                entry.summary.reason = nil
                statusChanged = true
            }
            entry.summary.lastMessageNs = receivedNs
            var frames: [LiveFrame] = []
            switch message.kind {
            case .status:
                if let status = message.status {
                    Self.apply(status, to: &entry)
                    statusChanged = true
                }
            case .frames:
                frames = entry.matcher.addFrame(message, jpeg: received.payload ?? [], receivedNs: receivedNs)
            case .video:
                let added = entry.video.add(message, payload: received.payload ?? [])
                ended = Self.deliver(added, of: entry.video, to: &state.watchers, source: message.source)
                if state.objectViewers[message.source] != nil {
                    Self.deliver(LiveObjects(clockOf: message), to: state.watchers, source: message.source)
                }
            case .events: break
            default:
                frames = entry.matcher.addObjects(message, receivedNs: receivedNs)
                // Drawn for the grid only while a grid watches this source.
                if state.objectViewers[message.source] != nil {
                    Self.deliver(LiveObjects(message), to: state.watchers, source: message.source)
                }
            }
            entry.summary.liveFrames += frames.count
            state.sources[message.source] = entry
            return frames
        }
        for stream in ended { stream.finish() }
        deliver(frames)
        if statusChanged { publishSummaries() }
    }

    private static func apply(_ status: SourceStatus, to entry: inout SourceEntry) {
        switch status.state {
        case .started:
            entry.matcher.reset()
            entry.video.reset()
            (entry.summary.state, entry.summary.reason) = (.running, nil)
        case .running, .resumed:
            (entry.summary.state, entry.summary.reason) = (.running, nil)
        case .interrupted: (entry.summary.state, entry.summary.reason) = (.interrupted, status.reason)
        case .stopped: (entry.summary.state, entry.summary.reason) = (.stopped, status.reason)
        case .failed: (entry.summary.state, entry.summary.reason) = (.failed, status.reason)
        }
        // `running` repeats it, for a console that started after the source.
        if let input = status.input { entry.summary.input = input }
        if let detections = status.detections {
            entry.summary.detections = detections
            entry.matcher.detections = Set(detections)
        }
        if let counters = status.counters { entry.summary.counters = counters }
    }

    /// Releases frames whose wait is over, and marks sources that went quiet as stopped.
    private func tick(nowNs: UInt64) {
        let (seconds, attoseconds) = silenceLimit.components
        let silence = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
        var quiet = false
        let frames: [LiveFrame] = state.withLock { state in
            var frames: [LiveFrame] = []
            for id in state.sources.keys {
                frames += state.sources[id]!.matcher.release(nowNs: nowNs)
                let summary = state.sources[id]!.summary
                if summary.state == .running || summary.state == .interrupted,
                    nowNs > summary.lastMessageNs + silence
                {
                    state.sources[id]!.summary.state = .stopped
                    state.sources[id]!.summary.reason = "no message for \(silenceLimit)"
                    quiet = true
                }
            }
            return frames
        }
        deliver(frames)
        if quiet { publishSummaries() }
    }

    private func deliver(_ frames: [LiveFrame]) {
        guard !frames.isEmpty else { return }
        let watchers = state.withLock { Array($0.watchers.values) }
        for frame in frames {
            for watcher in watchers where watcher.source == frame.source { watcher.frames?.yield(frame) }
        }
    }

    /// Hands a video fragment to the source's viewers (under the state lock, which keeps
    /// who has had the initialization segment); returns the streams to end: those of a
    /// stream that ended, and viewers too far behind.
    private static func deliver(
        _ added: LiveVideo.Added, of video: LiveVideo, to watchers: inout [UInt64: Watcher], source: String
    ) -> [AsyncStream<[UInt8]>.Continuation] {
        guard added.restarted || added.fragment != nil else { return [] }
        var ended: [AsyncStream<[UInt8]>.Continuation] = []
        for (id, watcher) in watchers where watcher.source == source {
            guard let stream = watcher.video else { continue }
            if added.restarted && watcher.started {
                ended.append(stream)
                continue
            }
            guard let fragment = added.fragment else { continue }
            if !watcher.started {
                // Joined before a key frame: from the first one.
                guard let movie = video.movie, added.keyFrame else { continue }
                stream.yield(movie.initialization)
                watchers[id]?.started = true
            }
            if case .dropped = stream.yield(fragment) { ended.append(stream) }
        }
        return ended
    }

    private static func deliver(_ objects: LiveObjects?, to watchers: [UInt64: Watcher], source: String) {
        guard let objects else { return }
        for watcher in watchers.values where watcher.source == source { watcher.objects?.yield(objects) }
    }

    private func publishSummaries() {
        let list = summaries
        for watcher in state.withLock({ Array($0.watchers.values) }) { watcher.summaries?.yield(list) }
    }
}
