import Foundation
import SightlineCore
import SightlineMovie
import SightlineTesting
import Testing

@Suite struct MovieReaderTests {
    /// Built by tools/make-iphone-fixture.py from the byte layouts of a real iPhone recording.
    static let iPhoneLayout = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/iphone-layout.mov").path

    @Test func readsAnIPhoneShapedRecording() throws {
        let movie = try MovieReader(path: Self.iPhoneLayout)
        #expect(movie.warnings.isEmpty)
        #expect(movie.tracks.map(\.id) == [2, 3, 4])
        #expect(movie.tracks.map(\.format) == ["avc1", "mebx", "mebx"])
        #expect(movie.tracks[1].describes == [2] && movie.tracks[2].describes == [2])
        #expect(movie.tracks[0].samples.count == 120)
        #expect(movie.tracks[0].samples.filter(\.isSync).count == 4)
        // Key ids in iOS's table order, resolved by id, not by position.
        #expect(movie.tracks[1].metadataFormat?.keys.map(\.localID) == [3, 1, 4, 2, 5])

        let faces = try movie.metadataGroups(track: 3)
        #expect(faces.count == 101)
        #expect(faces.map { $0.duration!.value } == [20] + Array(repeating: 20, count: 98) + [40, 380])
        #expect(faces.first!.items.isEmpty && faces.last!.items.isEmpty)
        let expectedFace: [MetadataItem] = [
            MetadataItem(identifier: MetadataIdentifier.detectedFaceID, dataType: .uint32, value: .uint(1)),
            MetadataItem(
                identifier: MetadataIdentifier.detectedFaceBounds, dataType: .polygonF32,
                value: .floats([0.26, 0.3764, 0.3704, 0.3764, 0.3704, 0.5756, 0.26, 0.5756].map { Double(Float($0)) })),
            MetadataItem(identifier: MetadataIdentifier.detectedFaceRollAngle, dataType: .float32, value: .float(270)),
            MetadataItem(identifier: MetadataIdentifier.detectedFaceYawAngle, dataType: .float32, value: .float(0)),
        ]
        for group in faces.dropFirst().dropLast() {
            #expect(
                group.items == [
                    MetadataItem(
                        identifier: MetadataIdentifier.detectedFace,
                        dataType: .named("com.apple.quicktime.detected-face"), value: .records([expectedFace]))
                ])
        }
        let orientation = try movie.metadataGroups(track: 4)
        #expect(
            orientation.map(\.items) == [
                [MetadataItem(identifier: MetadataIdentifier.videoOrientation, dataType: .int16, value: .int(6))]
            ])
        #expect(orientation[0].duration == MediaTime(value: 4, timescale: 1))
    }

    @Test func unknownKeysAndTypesComeBackAsRawBytes() throws {
        let directory = try TemporaryDirectory("unknown")
        let path = directory.file("unknown.mov")
        let strange = MetadataTrackFormat(
            keys: [
                MetadataKey(
                    localID: 0x7768_6572, identifier: "udta/\u{A9}xyz", dataType: .other(namespace: 7, bytes: [1, 2])),
                MetadataKey(localID: 9, identifier: "mdta/com.example.sensor", dataType: .wellKnown(999)),
                MetadataKey(localID: 10, identifier: "mdta/com.example.short", dataType: .float64),
            ], describesVideo: false)
        let writer = try MovieWriter(
            path: path,
            video: try VideoTrackFormat(
                configuration: [1, 0x42, 0, 0x1E, 0xFF, 0xE0, 0], width: 8, height: 8, timescale: 600),
            metadataTracks: [strange])
        try writer.append(
            TimedMetadataGroup(
                time: .zero,
                items: [
                    MetadataItem(identifier: "udta/\u{A9}xyz", dataType: .raw, value: .data([0xDE, 0xAD])),
                    MetadataItem(identifier: "mdta/com.example.sensor", dataType: .raw, value: .data([1, 2, 3])),
                    // Three bytes where float64 needs eight: kept as bytes, not misread.
                    MetadataItem(identifier: "mdta/com.example.short", dataType: .raw, value: .data([4, 5, 6])),
                ]), toMetadataTrack: 0)
        try writer.append(
            VideoAccessUnit(
                storedSample: [0, 0, 0, 1, 0x65], decodeTime: .zero, presentationTime: .zero,
                duration: MediaTime(value: 20, timescale: 600), isKeyFrame: true))
        try writer.finish()
        let movie = try MovieReader(path: path)
        #expect(
            movie.tracks[1].metadataFormat?.keys.map(\.identifier) == [
                "udta/\u{A9}xyz", "mdta/com.example.sensor", "mdta/com.example.short",
            ])
        let items = try movie.metadataGroups(track: 2).first?.items ?? []
        #expect(items.map(\.value) == [.data([0xDE, 0xAD]), .data([1, 2, 3]), .data([4, 5, 6])])
        #expect(items.map(\.dataType) == [.other(namespace: 7, bytes: [1, 2]), .wellKnown(999), .float64])
    }
}
