import Foundation
import SightlineCore
import SightlineMovie

/// What the player draws from a recording, read from the movie's own tracks by
/// `MovieReader`: `/api/recordings/<name>/metadata` (docs/console.md).
///
/// Groups follow `AVTimedMetadataGroup`: `t` is the start in seconds, `d` the duration when
/// the file gives one (else the group lasts until the next), and an empty group clears.
struct PlayerMetadata: Encodable, Sendable {
    struct Video: Encodable, Sendable {
        var track: UInt32
        var width: UInt32
        var height: UInt32
        /// How the track's matrix turns the picture (EXIF 1–8); browsers apply the turn
        /// themselves.
        var matrixOrientation: Int
        var frames: Int
        var duration: Double
        /// RFC 6381's codec (`avc1.640028`, `hvc1.1.6.L93.B0`), for the page to ask the
        /// browser whether it plays it; nil for a codec Sightline does not record.
        var codec: String?
    }

    struct Track: Encodable, Sendable {
        var id: UInt32
        /// `video`, `audio`, `faces`, `codes`, `location`, `orientation`, or the identifier.
        var kind: String
        var samples: Int
    }

    struct Group<Value: Encodable & Sendable>: Encodable, Sendable {
        var t: Double
        var d: Double?
        var v: Value?
    }

    /// When an object is in view: from the start of the first group that has it to the end
    /// of the last group of a run, runs less than `mergedGap` apart counting as one (a
    /// detector misses a face for a frame now and then; the tracker keeps its ID).
    struct Appearance: Encodable, Sendable {
        /// What one object of its kind is called (`face`, `code`, `object`).
        var kind: String
        var id: Int
        var start: Double
        var end: Double
        /// A code's text, a detected object's label, or the name of a face a gallery named
        /// (the last one it had).
        var text: String?
        /// A code's symbology or a detected object's type (`humanBody`), when it has one.
        var type: String?
        /// The colour its boxes are drawn in.
        var colour: String
        /// When it is seen best: its largest box, one the picture does not cut counting
        /// double (a face half out of the picture as it enters is not worth showing).
        var best: Double
        var bestSize = 0.0

        private enum CodingKeys: String, CodingKey { case kind, id, start, end, text, type, colour, best }

        /// How much of the picture a box shows of its object.
        static func size(of bounds: [Double]) -> Double {
            guard bounds.count == 4 else { return 0 }
            let (x, y, w, h) = (bounds[0], bounds[1], bounds[2], bounds[3])
            let visible = max(0, min(x + w, 1) - max(x, 0)) * max(0, min(y + h, 1) - max(y, 0))
            let inside = x >= 0 && y >= 0 && x + w <= 1 && y + h <= 1
            return inside ? visible * 2 : visible
        }
    }

    var name: String
    var duration: Double
    var fragmented: Bool
    var video: Video?
    var tracks: [Track]
    /// Each object kind's groups, by the kind's name (`faces`, `codes`).
    var groups: [String: [Group<[DrawnObject]>]] = [:]
    var location: [Group<String>] = []
    var orientation: [Group<Int>] = []
    var objects: [Appearance] = []

    init(movie: MovieReader, name: String) throws {
        self.name = name
        fragmented = movie.isFragmented
        duration = movie.tracks.map { $0.mediaDuration.seconds }.max() ?? 0
        tracks = movie.tracks.map { Track(id: $0.id, kind: Self.kind(of: $0), samples: $0.samples.count) }
        if let track = movie.tracks.first(where: { $0.mediaType == "vide" }) {
            let format = track.videoCodec.flatMap { codec in
                track.codecConfiguration.flatMap {
                    try? VideoTrackFormat(
                        codec: codec, configuration: $0, width: Int(track.width), height: Int(track.height),
                        timescale: Int32(clamping: max(track.timescale, 1)))
                }
            }
            video = Video(
                track: track.id, width: track.width, height: track.height, matrixOrientation: track.orientation,
                frames: track.samples.count, duration: track.mediaDuration.seconds, codec: format?.codecString)
        }
        var objectTracks: [(kind: String, groups: [Group<[DrawnObject]>])] = []
        for track in movie.tracks where track.metadataFormat != nil {
            let reader = try movie.metadataGroupReader(track: track.id)
            let kind = Self.kind(of: track)
            var objectGroups: [Group<[DrawnObject]>] = []
            while let group = try reader.next() { add(group, kind: kind, objects: &objectGroups) }
            if ObjectKind.all.contains(where: { $0.name == kind }) { objectTracks.append((kind, objectGroups)) }
        }
        for kind in ObjectKind.all {
            let tracks = objectTracks.filter { $0.kind == kind.name }.map(\.groups)
            if !tracks.isEmpty { groups[kind.name] = Self.merged(tracks) }
        }
        objects = ObjectKind.all.flatMap { kind in
            Self.appearances(of: kind, groups[kind.name] ?? [], end: duration)
        }.sorted { ($0.start, $0.kind) < ($1.start, $1.kind) }
    }

    private enum Key: String, CodingKey {
        case name, duration, fragmented, video, tracks, location, orientation, objects
    }

    /// Each object kind's groups are a field named after the kind (docs/console.md).
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(name, forKey: .name)
        try container.encode(duration, forKey: .duration)
        try container.encode(fragmented, forKey: .fragmented)
        try container.encodeIfPresent(video, forKey: .video)
        try container.encode(tracks, forKey: .tracks)
        try container.encode(location, forKey: .location)
        try container.encode(orientation, forKey: .orientation)
        try container.encode(objects, forKey: .objects)
        var kinds = encoder.container(keyedBy: FieldName.self)
        for kind in ObjectKind.all {
            let labelled = (groups[kind.name] ?? []).map { Group(t: $0.t, d: $0.d, v: $0.v.map(kind.labelled)) }
            try kinds.encode(labelled, forKey: FieldName(kind.name))
        }
    }

    /// One group of a track of `kind`: its objects, when the track is an object kind's, or
    /// the location or orientation it holds.
    private mutating func add(_ group: TimedMetadataGroup, kind: String, objects: inout [Group<[DrawnObject]>]) {
        let (t, d) = (group.time.seconds, group.duration?.seconds)
        if let objectKind = ObjectKind.all.first(where: { $0.name == kind }) {
            // An empty group ends what its track showed.
            objects.append(Group(t: t, d: d, v: objectKind.drawn(group.items) ?? []))
            return
        }
        for item in group.items where ObjectKind.tracked(by: item.identifier) == nil {
            switch (item.identifier, item.value) {
            case (MetadataIdentifier.locationISO6709, .string(let text)):
                location.append(Group(t: t, d: d, v: text))
            case (MetadataIdentifier.videoOrientation, .int(let value)) where (1...8).contains(value):
                orientation.append(Group(t: t, d: d, v: Int(value)))
            default: break
            }
        }
        // An empty group ends what its track showed.
        if group.items.isEmpty {
            switch kind {
            case "location": location.append(Group(t: t, d: d, v: nil))
            case "orientation": orientation.append(Group(t: t, d: d, v: nil))
            default: break
            }
        }
    }

    /// A kind's tracks (a detector's each) as one list of groups: at each time any of them
    /// starts a group, what all of them show then.
    private static func merged(_ tracks: [[Group<[DrawnObject]>]]) -> [Group<[DrawnObject]>] {
        guard tracks.count > 1 else { return tracks.first ?? [] }
        let starts = Set(tracks.flatMap { $0.map(\.t) }).sorted()
        return starts.map { t in Group(t: t, d: nil, v: tracks.flatMap { $0.active(at: t) ?? [] }) }
    }

    private static func kind(of track: MovieTrack) -> String {
        switch track.mediaType {
        case "vide": return "video"
        case "soun": return "audio"
        default: break
        }
        let identifiers = track.metadataFormat?.keys.map(\.identifier) ?? []
        if let format = track.metadataFormat, let kind = ObjectKind.recorded(in: format) { return kind.name }
        if identifiers.contains(MetadataIdentifier.locationISO6709) { return "location" }
        if identifiers.contains(MetadataIdentifier.videoOrientation) { return "orientation" }
        return identifiers.first ?? track.mediaType.description
    }

    private static func appearances(of kind: ObjectKind, _ groups: [Group<[DrawnObject]>], end: Double) -> [Appearance]
    {
        var open: [Int: Appearance] = [:]
        var done: [Appearance] = []
        for (index, group) in groups.enumerated() {
            let groupEnd = group.d.map { group.t + $0 } ?? (index + 1 < groups.count ? groups[index + 1].t : end)
            let present = group.v ?? []
            for (id, appearance) in open where !present.contains(where: { $0.id == id }) {
                done.append(appearance)
                open[id] = nil
            }
            for object in present {
                open[
                    object.id,
                    default: Appearance(
                        kind: kind.objectName, id: object.id, start: group.t, end: groupEnd, type: object.type,
                        colour: kind.colour(of: object).css, best: group.t)
                ].end = groupEnd
                let size = Appearance.size(of: object.bounds)
                if size > open[object.id]!.bestSize {
                    (open[object.id]!.best, open[object.id]!.bestSize) = (group.t, size)
                }
                if let text = object.text ?? object.name { open[object.id]?.text = text }
            }
        }
        var merged: [Appearance] = []
        for appearance in (done + open.values).sorted(by: { ($0.id, $0.start) < ($1.id, $1.start) }) {
            if let last = merged.last, last.id == appearance.id, appearance.start - last.end <= mergedGap {
                merged[merged.count - 1].end = max(last.end, appearance.end)
                if appearance.bestSize > last.bestSize {
                    (merged[merged.count - 1].best, merged[merged.count - 1].bestSize) = (
                        appearance.best, appearance.bestSize
                    )
                }
            } else {
                merged.append(appearance)
            }
        }
        return merged
    }

    static let mergedGap = 0.25
}
