/// The grid's two streams, each carrying every tile's share over one connection: a browser
/// opens at most six HTTP/1.1 connections to a host, so a connection per tile would leave
/// the seventh camera waiting.
///
/// - `video`: each source's fragmented MP4 (`LiveSources.video(of:)`) framed as
///   `[length: UInt32 big-endian][ID length: UInt8][source ID][bytes]`, `length` counting
///   what follows it. Empty bytes say that source's stream ended: its tile starts again, and
///   the next bytes of that source begin a new stream with its initialization segment.
/// - `messages`: each source's object messages and JPEG frames, as server-sent events.
///
/// Either ends when the page goes, or when the page falls behind (it connects again).
package struct LiveGrid: Sendable {
    let live: LiveSources
    let sources: [String]

    static let backlog = 600

    package func video() -> AsyncStream<[UInt8]> {
        merged { source, continuation in
            while !Task.isCancelled, !live.isFinished {
                for await fragment in live.video(of: source) {
                    guard case .enqueued = continuation.yield(Self.framed(source, fragment)) else {
                        return continuation.finish()
                    }
                }
                if Task.isCancelled { return }
                continuation.yield(Self.framed(source, []))
            }
        }
    }

    package func messages() -> AsyncStream<Message> {
        merged { source, continuation in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await objects in live.objects(of: source) { continuation.yield(.objects(source, objects)) }
                }
                group.addTask { for await frame in live.frames(of: source) { continuation.yield(.frame(frame)) } }
            }
        }
    }

    /// One server-sent event of the grid's messages.
    package enum Message: Sendable, Encodable {
        case objects(String, LiveObjects)
        case frame(LiveFrame)

        var name: String {
            switch self {
            case .objects: "objects"
            case .frame: "frame"
            }
        }

        package func encode(to encoder: any Encoder) throws {
            switch self {
            case .objects(let source, let objects):
                try SourceObjects(source: source, objects: objects).encode(to: encoder)
            case .frame(let frame): try frame.encode(to: encoder)
            }
        }

        /// The objects with the source they are of.
        private struct SourceObjects: Encodable {
            let source: String
            let objects: LiveObjects

            func encode(to encoder: any Encoder) throws {
                try objects.encode(to: encoder)
                var container = encoder.container(keyedBy: FieldName.self)
                try container.encode(source, forKey: FieldName("source"))
            }
        }
    }

    /// Runs `feed` for every source into one stream, until the stream's reader goes.
    private func merged<Element: Sendable>(
        _ feed: @escaping @Sendable (String, AsyncStream<Element>.Continuation) async -> Void
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Element.self, bufferingPolicy: .bufferingOldest(Self.backlog))
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for source in sources { group.addTask { await feed(source, continuation) } }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    static func framed(_ source: String, _ bytes: [UInt8]) -> [UInt8] {
        let id = Array(source.utf8)
        let length = UInt32(1 + id.count + bytes.count)
        return withUnsafeBytes(of: length.bigEndian, Array.init) + [UInt8(id.count)] + id + bytes
    }
}
