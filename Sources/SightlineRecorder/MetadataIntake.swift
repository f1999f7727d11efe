import SightlineCore
import SightlineMovie

/// Timed metadata on its way into files, as a value: the groups each message makes (a
/// kind's objects, a client's items, the source's orientation), which are refused and why,
/// which tracks new files declare, and what waits for its video. The recorder counts the
/// refusals, starts a new file when new files differ, and writes what is due.
struct MetadataIntake {
    /// The tracks new files declare, and how the source is turned.
    private(set) var tracks = RecordedTracks()
    /// Groups waiting for their video, and what holds for each identifier.
    private var delay = MetadataDelay()
    /// Client inputs' groups, each replacing the input's last one.
    private var clientInputs = ClientInputs()

    /// What taking a message in did.
    struct Outcome: Equatable {
        /// Groups refused, each by its reason (a counter's name).
        var refused: [String] = []
        /// How new files differ from those started before.
        var changes: [RecordedTracks.Change] = []
        /// The earliest time of the groups now waiting (nil: none was taken in).
        var earliest: MediaTime?
    }

    /// Client metadata tracks every file has from the start.
    init(clientTracks: [(identifier: String, dataType: MetadataDataType)]) {
        for (identifier, dataType) in clientTracks {
            _ = tracks.learn(identifier, .client(identifier: identifier, dataType: dataType))
        }
    }

    /// What holds for each identifier: a new file begins with it.
    var current: [String: TimedMetadataGroup] { delay.current }

    /// A source's status: the kinds it detects and how it is turned.
    mutating func status(_ status: SourceStatus) -> Outcome {
        var outcome = Outcome(changes: tracks.learn(detections: status.detections ?? []))
        if let orientation = status.input?.orientation, let change = tracks.learn(orientation: orientation) {
            let turned = MetadataItem(
                identifier: MetadataIdentifier.videoOrientation, dataType: .int16, value: .int(Int64(orientation)))
            delay.setCurrent(TimedMetadataGroup(time: .zero, items: [turned]), for: MetadataIdentifier.videoOrientation)
            outcome.changes.append(change)
        }
        return outcome
    }

    /// One message's objects of `kind`, as a group of the kind's track.
    mutating func objects(of kind: ObjectKind, _ message: Message, newestVideo: MediaTime?) -> Outcome {
        guard let time = message.time, let recorded = kind.recorded(message) else {
            return Outcome(refused: ["malformed"])
        }
        var outcome = Outcome()
        let track = recorded.track ?? (kind.trackIdentifier, kind.trackFormat)
        learn(track.identifier, track.format, &outcome)
        if recorded.usesExtraFields, let change = tracks.learnExtraFields(of: kind) { outcome.changes.append(change) }
        add(TimedMetadataGroup(time: time, items: recorded.items), for: track.identifier, newestVideo, &outcome)
        return outcome
    }

    /// A client group: each identifier to its own track (`ClientInputs`); one whose data
    /// type changed is refused.
    mutating func client(_ message: Message, newestVideo: MediaTime?) -> Outcome {
        guard let time = message.time, let group = message.metadata, let items = try? group.validated() else {
            return Outcome(refused: ["malformed"])
        }
        var outcome = Outcome()
        for (identifier, group) in clientInputs.groups(of: group, items: items, at: time) {
            if let item = group.items.first {
                let format = MetadataTrackFormat.client(identifier: identifier, dataType: item.dataType)
                if let known = tracks.format(of: identifier), known != format {
                    outcome.refused.append("dataTypeChanged")
                    continue
                }
                learn(identifier, format, &outcome)
            }
            add(group, for: identifier, newestVideo, &outcome)
        }
        return outcome
    }

    /// The groups due by `time` (all when nil), oldest first.
    mutating func take(upTo time: MediaTime?) -> [(identifier: String, group: TimedMetadataGroup)] {
        delay.take(upTo: time)
    }

    /// The source's next run has found no object yet: its first file starts without the last
    /// run's.
    mutating func startNewRun() {
        for identifier in delay.current.keys where ObjectKind.tracked(by: identifier) != nil {
            delay.setCurrent(nil, for: identifier)
        }
    }

    private mutating func learn(_ identifier: String, _ format: MetadataTrackFormat, _ outcome: inout Outcome) {
        if let change = tracks.learn(identifier, format) { outcome.changes.append(change) }
    }

    private mutating func add(
        _ group: TimedMetadataGroup, for identifier: String, _ newestVideo: MediaTime?, _ outcome: inout Outcome
    ) {
        if let refusal = delay.add(group, for: identifier, newestVideo: newestVideo) {
            outcome.refused.append(refusal.rawValue)
        } else {
            outcome.earliest = min(outcome.earliest ?? group.time, group.time)
        }
    }
}
