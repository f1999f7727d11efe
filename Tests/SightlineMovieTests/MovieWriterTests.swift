import Foundation
import SightlineCore
import SightlineMovie
import SightlineTesting
import Testing

@Suite struct MovieWriterTests {
    let recording: SampleRecording
    let directory: TemporaryDirectory

    init() throws {
        recording = try SampleRecording()
        directory = try TemporaryDirectory("movie")
    }

    @Test func readerGetsBackEveryFrameAndGroup() throws {
        let path = directory.file("sample.mov")
        try recording.write(to: path)
        let movie = try MovieReader(path: path)
        #expect(!movie.isFragmented)
        #expect(movie.warnings.isEmpty)
        #expect(movie.tracks.map(\.format) == ["avc1", "mebx", "mebx", "mebx", "mebx"])
        #expect(movie.tracks.map(\.describes) == [[], [1], [1], [], [1]])
        let video = movie.tracks[0]
        #expect(video.samples.count == 300)
        #expect(video.samples.filter(\.isSync).count == recording.packets.filter(\.isKeyFrame).count)
        // Presentation times come back exactly, first frame at movie time zero.
        let times = video.samples.map { video.presentationTime(of: $0) }.sorted()
        #expect(times == recording.frameTimes.map { $0 - recording.frameTimes[0] })
        // Every sample's bytes are the packet's bytes.
        for (sample, packet) in zip(video.samples, recording.packets) {
            #expect(try movie.readSample(sample) == packet.data)
        }

        // Faces: per frame as scripted, NULL groups where there are none, no gap anywhere.
        let groups = try movie.metadataGroups(track: 2)
        var covered = MediaTime(value: 0, timescale: 15360)
        for group in groups {
            #expect(group.time == covered)
            covered = group.time + group.duration!
            let frame = Int((group.time.seconds * 30).rounded())
            let expected = SampleRecording.faces(onFrame: frame)
            guard case .records(let records)? = group.items.first?.value else {
                #expect(expected.isEmpty, "frame \(frame)")
                continue
            }
            #expect(group.duration == MediaTime(value: 1, timescale: 30), "one frame per face sample")
            #expect(records.count == expected.count)
            for (record, face) in zip(records, expected) {
                #expect(
                    record.first { $0.identifier == MetadataIdentifier.detectedFaceID }?.value
                        == .uint(UInt64(face.faceID)))
                let b = face.bounds
                let corners = [b.x, b.y, b.x + b.width, b.y, b.x + b.width, b.y + b.height, b.x, b.y + b.height]
                #expect(
                    record.first { $0.identifier == MetadataIdentifier.detectedFaceBounds }?.value
                        == .floats(corners.map { Double(Float($0)) }))
                #expect(
                    record.first { $0.identifier == MetadataIdentifier.detectedFaceRollAngle }?.value
                        == face.rollAngle.map { .float($0) })
                #expect(
                    record.first { $0.identifier == MetadataIdentifier.detectedFaceYawAngle }?.value
                        == face.yawAngle.map { .float($0) })
            }
        }
        #expect(covered == MediaTime(value: 10, timescale: 1))
        #expect(groups.filter { !$0.items.isEmpty }.count == 230)

        // Orientation and location hold across fragments: written again in each one.
        let orientation = try movie.metadataGroups(track: 3)
        #expect(orientation.count == movie.topLevelBoxes.filter { $0.type == "mdat" }.count)
        #expect(Set(orientation.flatMap(\.items).map(\.value)) == [.int(1)])
        let location = try movie.metadataGroups(track: 4)
        let places = location.map { ($0.time.seconds, $0.items.first?.value) }
        #expect(
            places.allSatisfy {
                $0.0 < 5 ? $0.1 == .string(SampleRecording.location1) : $0.1 == .string(SampleRecording.location2)
            })
        let codes = try movie.metadataGroups(track: 5)
        let frames = codes.filter { !$0.items.isEmpty }.map { group in
            Int((group.time.seconds * 30).rounded())..<Int(((group.time + group.duration!).seconds * 30).rounded())
        }
        #expect(frames == [60..<120])
        #expect(
            codes.first { !$0.items.isEmpty }?.items == [
                MetadataItem(
                    identifier: MetadataIdentifier.detectedMachineReadableCodes, dataType: .utf8,
                    value: .string(SampleRecording.barcodeJSON))
            ])
    }

    @Test func ffprobeExiftoolAndMediainfoSeeWhatWasWritten() throws {
        let path = directory.file("sample.mov")
        try recording.write(to: path)
        let streams = try IndependentReaders.streams(path)
        #expect(streams.map(\.type) == ["video", "data", "data", "data", "data"])
        #expect(streams.map(\.tag) == ["avc1", "mebx", "mebx", "mebx", "mebx"])
        #expect(streams[0].frames == 300)
        #expect(try IndependentReaders.decodedFrames(path) == 300)

        let documents = try IndependentReaders.exiftoolDocuments(path)
        let faceDocuments = documents.values.filter { $0["DetectedFaceID"] != nil }
        #expect(faceDocuments.count == 230)
        for document in faceDocuments {
            let frame = Int((Double(document["SampleTime"]![0])! * 30).rounded())
            let faces = SampleRecording.faces(onFrame: frame)
            #expect(document["DetectedFaceID"]! == faces.map { String($0.faceID) }, "frame \(frame)")
            let bounds = document["DetectedFaceBounds"]!.map { $0.split(separator: " ").map { Float($0)! } }
            #expect(
                bounds
                    == faces.map { f in
                        let b = f.bounds
                        return [b.x, b.y, b.x + b.width, b.y, b.x + b.width, b.y + b.height, b.x, b.y + b.height].map {
                            Float($0)
                        }
                    })
            #expect(document["DetectedFaceRollAngle"]! == faces.compactMap { $0.rollAngle.map { String(Int($0)) } })
            #expect(
                (document["DetectedFaceYawAngle"] ?? []) == faces.compactMap { $0.yawAngle.map { String(Int($0)) } })
        }
        let all = documents.values
        #expect(Set(all.compactMap { $0["GPSCoordinates"]?.first }) == ["48.8577 2.295 35", "48.8584 2.2945 35"])
        #expect(Set(all.compactMap { $0["VideoOrientation"]?.first }) == ["1"])
        #expect(
            all.compactMap { $0["MdtacomSightlineDetectedMachineReadableCodes"]?.first } == [
                SampleRecording.barcodeJSON
            ])

        let info = try ExternalTool.json("mediainfo", ["--Output=JSON", path]) as? [String: Any]
        let tracks = ((info?["media"] as? [String: Any])?["track"] as? [[String: Any]]) ?? []
        let video = tracks.first { $0["@type"] as? String == "Video" }
        #expect(video?["FrameCount"] as? String == "300")
        #expect(video?["Format"] as? String == "AVC")
    }

    @Test func aFaceSampleAndItsKeyTableAreByteForByteWhatIOSWrites() throws {
        let path = directory.file("one-face.mov")
        let writer = try MovieWriter(
            path: path, video: recording.format, metadataTracks: [.detectedFaces, .videoOrientation])
        let first = recording.packets[0]
        let face = FaceObject(
            faceID: 1, bounds: NormalizedRect(x: 0.26, y: 0.3764, width: 0.3704 - 0.26, height: 0.5756 - 0.3764),
            rollAngle: 270, yawAngle: 0, time: first.presentationTime, duration: nil, score: 1, subDetector: 0)
        try writer.append(
            TimedMetadataGroup(time: first.presentationTime, items: [.detectedFaces([face])]), toMetadataTrack: 0)
        try writer.append(
            TimedMetadataGroup(
                time: first.presentationTime,
                items: [MetadataItem(identifier: MetadataIdentifier.videoOrientation, dataType: .int16, value: .int(6))]
            ),
            toMetadataTrack: 1)
        try writer.append(
            VideoAccessUnit(
                storedSample: first.data, decodeTime: first.decodeTime, presentationTime: first.presentationTime,
                duration: first.duration, isKeyFrame: true))
        try writer.finish()

        let movie = try MovieReader(path: path)
        let faceTrack = movie.tracks[1]
        // The iPhone's bytes, from docs/movie-format.md (hex as printed there).
        let expectedSample = Hex.bytes(
            """
            00000064 00000001 0000005C 63726563 00000054 63697473 0000000C 00000002 00000001
            00000028 00000003 3E851EB8 3EC0B780 3EBDA512 3EC0B780 3EBDA512 3F135A86 3E851EB8 3F135A86
            0000000C 00000004 43870000 0000000C 00000005 00000000
            """)
        #expect(try movie.readSample(faceTrack.samples[0]) == expectedSample)
        let sdpd = "00000014 73647064 0000000C 73647069 00000000"
        func key(_ id: Int, _ namespace: String, _ name: String, dtyp: String, extra: String = "") -> String {
            let keyd = Hex.box("keyd", Hex.string(namespace) + Hex.string(name))
            return Hex.box(Hex.u32(id), keyd + Hex.box("dtyp", dtyp) + extra)
        }
        let keys =
            key(3, "fiel", "com.apple.quicktime.detected-face.bounds", dtyp: "00000000 00000050", extra: sdpd)
            + key(
                1, "mdta", "com.apple.quicktime.detected-face",
                dtyp: "00000001" + Hex.string("com.apple.quicktime.detected-face"),
                extra: Hex.box("ctps", Hex.box("dtyp", "00000000 00000045")))
            + key(4, "fiel", "com.apple.quicktime.detected-face.roll-angle", dtyp: "00000000 00000017", extra: sdpd)
            + key(2, "fiel", "com.apple.quicktime.detected-face.face-id", dtyp: "00000000 0000004D")
            + key(5, "fiel", "com.apple.quicktime.detected-face.yaw-angle", dtyp: "00000000 00000017", extra: sdpd)
        let lidpLidl =
            "0000000C 6C696470 00000001 00000020 6C69646C 00000018 01000000 00000002 00000003 00000004 00000005"
        let expectedEntry = Hex.bytes(Hex.box("mebx", "000000000000 0001" + Hex.box("keys", keys) + lidpLidl))
        #expect(faceTrack.sampleEntry == expectedEntry)

        // The orientation track: entry and sample verbatim from the iPhone file.
        let orientation = movie.tracks[2]
        #expect(
            orientation.sampleEntry
                == Hex.bytes(
                    """
                    00000075 6D656278 00000000 00000001 00000065 6B657973 0000005D 00000001
                    00000031 6B657964 6D647461 636F6D2E 6170706C 652E7175 69636B74 696D652E
                    76696465 6F2D6F72 69656E74 6174696F 6E000000 10647479 70000000 00000000
                    42000000 14736470 64000000 0C736470 69000000 00
                    """))
        #expect(try movie.readSample(orientation.samples[0]) == Hex.bytes("0000000A 00000001 0006"))
    }

    @Test func everyDataTypeRoundTrips() throws {
        let values: [(MetadataDataType, MetadataValue)] = [
            (.utf8, .string("héllo, wörld")), (.utf16, .string("日本語 text")), (.float32, .float(1.5)),
            (.float64, .float(-2.25e-7)),
            (.int8, .int(-128)), (.int16, .int(-32768)), (.int32, .int(Int64(Int32.min))), (.int64, .int(Int64.min)),
            (.uint8, .uint(255)), (.uint16, .uint(65535)), (.uint32, .uint(UInt64(UInt32.max))),
            (.uint64, .uint(UInt64.max)),
            (.pointF32, .floats([0.5, 0.25])), (.dimensionsF32, .floats([640, 480])),
            (.rectF32, .floats([0.125, 0.25, 0.5, 0.75])),
            (.affineTransformF64, .floats([1, 0, 0, 0, 1, 0, 0.5, 0.25, 1])),
            (.polygonF32, .floats([0, 0, 1, 0, 0.5, 1])),
            (.raw, .data([0, 1, 2, 255])), (.jpeg, .data([0xFF, 0xD8, 0xFF, 0xD9])),
            (.named("com.example.custom"), .data([9, 8, 7])),
        ]
        let formats =
            values.enumerated().map { index, entry in
                MetadataTrackFormat.client(identifier: "mdta/com.example.value\(index)", dataType: entry.0)
            } + [.locationISO6709, .videoOrientation]
        let path = directory.file("types.mov")
        let writer = try MovieWriter(path: path, video: recording.format, metadataTracks: formats)
        let start = recording.packets[0].presentationTime
        for (index, entry) in values.enumerated() {
            try writer.append(
                TimedMetadataGroup(
                    time: start,
                    items: [
                        MetadataItem(identifier: "mdta/com.example.value\(index)", dataType: entry.0, value: entry.1)
                    ]),
                toMetadataTrack: index)
        }
        try writer.append(
            TimedMetadataGroup(
                time: start,
                items: [
                    MetadataItem(
                        identifier: MetadataIdentifier.locationISO6709, dataType: .utf8,
                        value: .string("+35.6895+139.6917/"))
                ]), toMetadataTrack: values.count)
        try writer.append(
            TimedMetadataGroup(
                time: start,
                items: [MetadataItem(identifier: MetadataIdentifier.videoOrientation, dataType: .int16, value: .int(8))]
            ), toMetadataTrack: values.count + 1)
        for packet in recording.packets.prefix(30) {
            try writer.append(
                VideoAccessUnit(
                    storedSample: packet.data, decodeTime: packet.decodeTime, presentationTime: packet.presentationTime,
                    duration: packet.duration, isKeyFrame: packet.isKeyFrame))
        }
        try writer.finish()

        let movie = try MovieReader(path: path)
        for (index, entry) in values.enumerated() {
            let groups = try movie.metadataGroups(track: UInt32(index + 2))
            #expect(groups.count == 1)
            #expect(
                groups.first?.items == [
                    MetadataItem(identifier: "mdta/com.example.value\(index)", dataType: entry.0, value: entry.1)
                ])
        }
        #expect(
            try movie.metadataGroups(track: UInt32(values.count + 2)).first?.items.first?.value
                == .string("+35.6895+139.6917/"))
        #expect(try movie.metadataGroups(track: UInt32(values.count + 3)).first?.items.first?.value == .int(8))
        let documents = try IndependentReaders.exiftoolDocuments(path).values
        #expect(documents.contains { $0["GPSCoordinates"] == ["35.6895 139.6917"] })
        #expect(documents.contains { $0["VideoOrientation"] == ["8"] })
    }

    @Test func aClassicMovieHasNoFragments() throws {
        let path = directory.file("classic.mov")
        try recording.write(to: path, fragmentInterval: nil)
        let movie = try MovieReader(path: path)
        #expect(!movie.topLevelBoxes.contains { $0.type == "moof" || $0.type == "free" })
        #expect(movie.tracks[0].samples.count == 300)
        #expect(try IndependentReaders.decodedFrames(path) == 300)
        #expect(try movie.metadataGroups(track: 2).filter { !$0.items.isEmpty }.count == 230)
    }

    /// A camera that lost a second of frames: every frame still carries its own duration
    /// (1/30 s), but the movie's timeline keeps the gap in decode times, so the video stays
    /// in step with its sound and its metadata after it.
    @Test func aGapInTheVideosTimesIsKept() throws {
        let path = directory.file("gap.mov")
        let writer = try MovieWriter(
            path: path, video: recording.format, metadataTracks: [],
            configuration: .init(fragmentInterval: MediaTime(value: 2, timescale: 1), syncEachFragment: false))
        // From a key frame on (closed GOPs: nothing before it is shown after it), a second later.
        let gapAt = try #require(recording.packets.indices.first { $0 >= 150 && recording.packets[$0].isKeyFrame })
        let second = MediaTime(value: 1, timescale: 1)
        for (index, packet) in recording.packets.enumerated() {
            let shift = index >= gapAt ? second : .zero
            try writer.append(
                VideoAccessUnit(
                    storedSample: packet.data, decodeTime: packet.decodeTime + shift,
                    presentationTime: packet.presentationTime + shift, duration: MediaTime(value: 1, timescale: 30),
                    isKeyFrame: packet.isKeyFrame))
        }
        try writer.finish()
        let video = try MovieReader(path: path).tracks[0]
        let written = video.samples.map { video.presentationTime(of: $0) }.sorted()
        let start = recording.frameTimes[0]
        let expected = recording.packets.enumerated().map { index, packet in
            packet.presentationTime + (index >= gapAt ? second : .zero) - start
        }.sorted()
        #expect(written == expected)
        let probed = try ExternalTool.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=duration", "-of", "csv=p=0", path])
        #expect(abs((Double(probed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 11) < 0.05)
        #expect(try IndependentReaders.decodedFrames(path) == 300)
    }

    @Test func wrongInputIsRefusedInOneLine() throws {
        let writer = try MovieWriter(
            path: directory.file("refuse.mov"), video: recording.format, metadataTracks: [.detectedFaces])
        let second = recording.packets[1]
        #expect(throws: MovieError.invalidInput("the first video sample must be a key frame")) {
            try writer.append(
                VideoAccessUnit(
                    storedSample: second.data, decodeTime: second.decodeTime, presentationTime: second.presentationTime,
                    isKeyFrame: false))
        }
        let first = recording.packets[0]
        try writer.append(
            VideoAccessUnit(
                storedSample: first.data, decodeTime: first.decodeTime, presentationTime: first.presentationTime,
                isKeyFrame: true))
        #expect(throws: MovieError.self) {
            try writer.append(
                VideoAccessUnit(
                    storedSample: first.data, decodeTime: first.decodeTime, presentationTime: first.presentationTime,
                    isKeyFrame: true))
        }
        #expect(throws: MovieError.invalidInput("the track has no key 'mdta/com.example.nope'")) {
            try writer.append(
                TimedMetadataGroup(
                    time: .zero,
                    items: [MetadataItem(identifier: "mdta/com.example.nope", dataType: .utf8, value: .string("x"))]),
                toMetadataTrack: 0)
        }
        #expect(throws: MovieError.self) {
            try writer.append(
                TimedMetadataGroup(
                    time: .zero,
                    items: [
                        MetadataItem(identifier: MetadataIdentifier.detectedFace, dataType: .utf8, value: .string("x"))
                    ]), toMetadataTrack: 0)
        }
        try writer.finish()
        #expect(throws: MovieError.writerClosed(path: directory.file("refuse.mov"))) {
            try writer.append(
                VideoAccessUnit(
                    storedSample: first.data, decodeTime: second.decodeTime, presentationTime: second.presentationTime,
                    isKeyFrame: true))
        }
        do {
            _ = try MovieWriter(path: "/nonexistent/dir/x.mov", video: recording.format)
            Issue.record("expected an error")
        } catch {
            #expect("\(error)" == "opening /nonexistent/dir/x.mov failed: No such file or directory")
        }
    }

    @Test func metadataForTimeAlreadyWrittenIsReportedTooLate() throws {
        let writer = try MovieWriter(
            path: directory.file("late.mov"), video: recording.format, metadataTracks: [.detectedFaces])
        for packet in recording.packets.prefix(90) {
            try writer.append(
                VideoAccessUnit(
                    storedSample: packet.data, decodeTime: packet.decodeTime, presentationTime: packet.presentationTime,
                    isKeyFrame: packet.isKeyFrame))
        }
        #expect(writer.fragmentsWritten >= 1)
        #expect(
            try writer.append(TimedMetadataGroup(time: recording.frameTimes[1], items: []), toMetadataTrack: 0)
                == .tooLate)
        #expect(
            try writer.append(TimedMetadataGroup(time: recording.frameTimes[89], items: []), toMetadataTrack: 0)
                == .queued)
        try writer.finish()
    }
}

/// Hex text (spaces and newlines ignored) as bytes, and small builders for expected boxes.
enum Hex {
    static func bytes(_ text: String) -> [UInt8] {
        let digits = Array(text.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }
    static func string(_ text: String) -> String { text.utf8.map { String(format: "%02X", $0) }.joined() }
    static func u32(_ value: Int) -> String { String(format: "%08X", value) }
    static func box(_ type: String, _ payloadHex: String) -> String {
        let payload = payloadHex.filter(\.isHexDigit)
        let typeHex = type.count == 4 ? string(type) : type
        return u32(8 + payload.count / 2) + typeHex + payload
    }
}
