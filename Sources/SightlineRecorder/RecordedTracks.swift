import SightlineCore
import SightlineMovie

/// The metadata tracks new recordings declare, in order: the kinds every recording has
/// (faces) first, then each as it is learned from the source's status and messages. A
/// file's tracks are fixed when it starts (as with `AVCaptureMetadataInput`, whose format
/// is given up front), so each change says whether new files differ from the open one, and
/// the recorder then starts a new file at the next key frame.
struct RecordedTracks {
    private(set) var tracks: [(identifier: String, format: MetadataTrackFormat)] = ObjectKind.all.filter(
        \.recordedFromStart
    ).map { ($0.trackIdentifier, $0.trackFormat) }

    /// How the source's frames are turned for display (EXIF 2-8), once its status has said:
    /// new files get the matrix and an orientation track, as iOS writes them.
    private(set) var orientation: Int?

    /// What changed for new files.
    enum Change: Equatable, CustomStringConvertible {
        /// A track for an identifier files did not have.
        case newTrack(String)
        /// A kind's track declares its extra fields (a gallery names faces).
        case extraFields(kind: String, detection: String)
        /// The source is turned another way (EXIF orientation 2-8).
        case orientation(Int)

        var description: String {
            switch self {
            case .newTrack(let identifier): "new metadata track \(identifier)"
            case .extraFields(let kind, let detection): "\(kind) have \(detection), with their fields"
            case .orientation(let orientation): "the source is turned (EXIF orientation \(orientation))"
            }
        }
    }

    /// The format new files declare for `identifier`; nil: no track yet.
    func format(of identifier: String) -> MetadataTrackFormat? {
        tracks.first { $0.identifier == identifier }?.format
    }

    /// New files get a track for `identifier` (unless they have one).
    mutating func learn(_ identifier: String, _ format: MetadataTrackFormat) -> Change? {
        guard self.format(of: identifier) == nil else { return nil }
        tracks.append((identifier, format))
        return .newTrack(identifier)
    }

    /// New files declare `kind`'s extra fields in its track (when it has one).
    mutating func learnExtraFields(of kind: ObjectKind) -> Change? {
        guard let extra = kind.extraFields,
            let index = tracks.firstIndex(where: { $0.identifier == kind.trackIdentifier }),
            tracks[index].format != extra.trackFormat
        else { return nil }
        tracks[index].format = extra.trackFormat
        return .extraFields(kind: kind.name, detection: extra.detection)
    }

    /// The source is turned: new files show it turned (the video track's matrix) and say so
    /// in an orientation track. Nil when that changes nothing (the same turn, or none of
    /// EXIF's 2-8).
    mutating func learn(orientation: Int) -> Change? {
        guard orientation != self.orientation, (2...8).contains(orientation) else { return nil }
        self.orientation = orientation
        _ = learn(MetadataIdentifier.videoOrientation, .videoOrientation)
        return .orientation(orientation)
    }

    /// What a source's status says it detects: each kind's track, and the extra fields it
    /// announces.
    mutating func learn(detections: [String]) -> [Change] {
        let tracksLearned = ObjectKind.listed(in: detections).compactMap { learn($0.trackIdentifier, $0.trackFormat) }
        let fieldsLearned = ObjectKind.all.filter { kind in
            kind.extraFields.map { detections.contains($0.detection) } == true
        }.compactMap { learnExtraFields(of: $0) }
        return tracksLearned + fieldsLearned
    }
}
