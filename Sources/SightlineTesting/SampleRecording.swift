import Foundation
import SightlineCapture
import SightlineCore
import SightlineMovie
import SightlineSamples

/// The bundled 640x480 clip (300 frames, 30 fps, H.264 with B-frames) remuxed with a known
/// script of faces, a barcode, location and orientation, so tests can compare what every
/// reader sees with what was written.
package struct SampleRecording {
    package static let location1 = "+48.8577+002.2950+035.000/"
    package static let location2 = "+48.8584+002.2945+035.000/"
    /// A code as the recorder writes it in the codes track (docs/movie-format.md).
    package static let barcodeJSON =
        #"[{"bounds":{"height":0.2,"width":0.2,"x":0.1,"y":0.1},"codeID":1,"corners":[{"x":0.1,"y":0.1},"#
        + #"{"x":0.3,"y":0.1},{"x":0.3,"y":0.3},{"x":0.1,"y":0.3}],"stringValue":"https://example.com/sightline","#
        + #""type":"qr"}]"#
    package static let tracks: [MetadataTrackFormat] = [
        .detectedFacesWithIdentities, .videoOrientation, .locationISO6709, .detectedMachineReadableCodes,
    ]
    /// Whose face 2 is, from frame 150 on, as a gallery would have named it mid-track.
    package static let identity = FaceIdentity(name: "Ada Lovelace", distance: 0.375)

    /// Faces on frame `n` (30 fps): none for 0–29, face 1 from 30, face 2 joins at 90 (named
    /// `identity` from 150) and both leave at 200; face 3 (roll, no yaw) from 240 to the end.
    package static func faces(onFrame n: Int) -> [FaceObject] {
        func face(_ id: Int, x: Double, roll: Double?, yaw: Double?) -> FaceObject {
            FaceObject(
                faceID: id, bounds: NormalizedRect(x: x, y: 0.25 + Double(id) * 0.05, width: 0.2, height: 0.3),
                rollAngle: roll, yawAngle: yaw, time: MediaTime(value: Int64(n), timescale: 30), duration: nil,
                score: 1, subDetector: 0)
        }
        var faces: [FaceObject] = []
        if (30..<200).contains(n) { faces.append(face(1, x: 0.05 + Double(n) * 0.001, roll: 0, yaw: 0)) }
        if (90..<200).contains(n) {
            var named = face(2, x: 0.6, roll: 27, yaw: 315)
            if n >= 150 { named.identity = identity }
            faces.append(named)
        }
        if n >= 240 { faces.append(face(3, x: 0.4 - Double(n - 240) * 0.002, roll: 333, yaw: nil)) }
        return faces
    }

    package let packets: [EncodedVideoReader.Packet]
    package let format: VideoTrackFormat
    /// Presentation time of each frame, in presentation order.
    package let frameTimes: [MediaTime]

    package init() throws {
        let reader = try EncodedVideoReader(url: SampleMedia.faces640x480.path)
        var packets: [EncodedVideoReader.Packet] = []
        while let packet = try reader.next() { packets.append(packet) }
        self.packets = packets
        format = try VideoTrackFormat(
            configuration: reader.codecConfiguration, width: reader.width, height: reader.height,
            timescale: reader.timescale)
        frameTimes = packets.map(\.presentationTime).sorted()
    }

    /// Writes the recording; without `finish` the file is left as a crash would leave it.
    @discardableResult
    package func write(
        to path: String, fragmentInterval: MediaTime? = MediaTime(value: 2, timescale: 1), finish: Bool = true
    )
        throws -> MovieWriter
    {
        let writer = try MovieWriter(
            path: path, video: format, metadataTracks: Self.tracks,
            configuration: .init(fragmentInterval: fragmentInterval, syncEachFragment: false))
        let start = frameTimes[0]
        try writer.append(
            TimedMetadataGroup(
                time: start,
                items: [MetadataItem(identifier: MetadataIdentifier.videoOrientation, dataType: .int16, value: .int(1))]
            ),
            toMetadataTrack: 1)
        for (time, text) in [(start, Self.location1), (start + MediaTime(value: 5, timescale: 1), Self.location2)] {
            try writer.append(
                TimedMetadataGroup(
                    time: time,
                    items: [
                        MetadataItem(
                            identifier: MetadataIdentifier.locationISO6709, dataType: .utf8, value: .string(text))
                    ]),
                toMetadataTrack: 2)
        }
        var hadFaces = false
        try appendVideo(to: writer) { frame, time in
            let faces = Self.faces(onFrame: frame)
            if !faces.isEmpty || hadFaces {
                try writer.append(
                    TimedMetadataGroup(time: time, items: faces.isEmpty ? [] : [.detectedFaces(faces)]),
                    toMetadataTrack: 0)
            }
            hadFaces = !faces.isEmpty
            if frame == 60 || frame == 120 {
                let items =
                    frame == 60
                    ? [
                        MetadataItem(
                            identifier: MetadataIdentifier.detectedMachineReadableCodes, dataType: .utf8,
                            value: .string(Self.barcodeJSON))
                    ]
                    : []
                try writer.append(TimedMetadataGroup(time: time, items: items), toMetadataTrack: 3)
            }
        }
        if finish { try writer.finish() }
        return writer
    }

    /// Appends the clip's video to `writer`, calling `metadata` with each frame's number and
    /// time once the video has reached it, as a recorder appends a frame's metadata.
    package func appendVideo(to writer: MovieWriter, metadata: (Int, MediaTime) throws -> Void) throws {
        var nextFrame = 0
        for packet in packets {
            while nextFrame < frameTimes.count, frameTimes[nextFrame] <= packet.presentationTime {
                try metadata(nextFrame, frameTimes[nextFrame])
                nextFrame += 1
            }
            try writer.append(
                VideoAccessUnit(
                    storedSample: packet.data, decodeTime: packet.decodeTime, presentationTime: packet.presentationTime,
                    duration: packet.duration, isKeyFrame: packet.isKeyFrame))
        }
    }
}
