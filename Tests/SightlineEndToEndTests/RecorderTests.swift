import Foundation
import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineMovie
import SightlinePipeline
import SightlineRecorder
import SightlineSamples
import SightlineTesting
import Testing

/// Recording end to end, with real processes, sockets, encoder and files, checked with
/// ffprobe and exiftool.
@Suite struct RecorderTests {
    let cli = CommandLineTests()
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("record") }

    func recordings(in path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".mov") }.sorted().map {
            "\(path)/\($0)"
        }
    }

    /// How many fragment headers (`moof`) the recording being written in `directory` has.
    func fragmentHeaders(in directory: String) -> Int {
        guard let file = try? recordings(in: directory).first, let movie = try? MovieReader(path: file) else {
            return 0
        }
        return movie.topLevelBoxes.filter { $0.type == "moof" }.count
    }

    /// `run --print --record … | head -c 100`: the reader goes away after its first 100
    /// bytes, and the run and its recording go on to the end (SIGPIPE used to end both).
    @Test func recordingOutlivesAReaderThatGoesAway() throws {
        let out = directory.file("closed-stdout")
        let outcome = try cli.sightline(
            [
                "run", "--realtime", "--print", "--record", out, "--publish",
                "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ], timeout: 120, stdoutClosedAfter: 100)
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        #expect(outcome.stdout.utf8.count == 100)
        #expect(outcome.stderrLines.filter { $0.contains("standard output is closed") }.count == 1)
        let files = try recordings(in: out)
        #expect(files.count == 1)
        #expect(try decodedFrames(try #require(files.first)) == 300)
    }

    /// `sightline run --print` on the bundled sample with `options`: how it ended, and the
    /// messages it printed.
    private func runPrinting(_ options: [String]) throws -> (CommandLineTests.Outcome, [Message]) {
        let outcome = try cli.sightline(
            ["run"] + options + ["--print", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"],
            timeout: 120)
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        let messages = try outcome.stdout.split(separator: "\n").map {
            try JSONDecoder().decode(Message.self, from: Data($0.utf8))
        }
        return (outcome, messages)
    }

    /// `sightline run --record`: the file holds every published frame, decodable, and
    /// exiftool shows for each analysed frame the face IDs and boxes the run published.
    @Test func runRecordsWhatItPublishes() throws {
        let out = directory.file("run")
        let (outcome, messages) = try runPrinting(["--every-frame", "--reencode", "--record", out])
        let counters = try #require(messages.last?.status?.counters)
        #expect(counters.videoPackets == 300)
        #expect(counters.encoding?.count == 300)
        #expect(outcome.stderrLines.contains { $0.contains("recording: \(out)/cam1-") })
        let files = try recordings(in: out)
        #expect(files.count == 1)
        let file = try #require(files.first)
        #expect(try decodedFrames(file) == counters.videoPackets)

        // Faces: exiftool's samples carry the IDs and boxes of the published messages.
        let published = messages.filter { $0.kind == .faces && !($0.faces ?? []).isEmpty }
        #expect(published.count == 294)
        let documents = try exiftoolFaces(file)
        #expect(documents.count == published.count)
        for message in published {
            let key = Int((message.time!.seconds * 30).rounded())
            let document = try #require(documents[key], "no exiftool sample at frame \(key)")
            #expect(document.ids == message.faces!.map(\.faceID), "frame \(key)")
            let boxes = message.faces!.map { face -> [Float] in
                let b = face.bounds
                return [b.x, b.y, b.x + b.width, b.y, b.x + b.width, b.y + b.height, b.x, b.y + b.height].map {
                    Float($0)
                }
            }
            #expect(document.bounds == boxes, "frame \(key)")
        }
    }

    /// `--detect-fps`: a file read whole at 1 and at 5 analysed frames a second. The 300
    /// frames are all published and recorded; the faces are found on every 30th or 6th frame
    /// (the others counted as `rate`, none as `late`) and hold until the next, and each
    /// analysed frame's faces are in the file, at that frame, as exiftool reads them: none
    /// came after the video had passed.
    @Test(arguments: [1, 5]) func aChosenRateAnalysesEvenlyAndRecordsEveryFrame(rate: Int) throws {
        let out = directory.file("rate-\(rate)")
        let (outcome, messages) = try runPrinting(["--detect-fps", "\(rate)", "--record", out])
        let counters = try #require(messages.last?.status?.counters)
        #expect(counters.videoPackets == 300)
        #expect(counters.outputs["detect"] == OutputCounters(delivered: 10 * rate, dropped: ["rate": 300 - 10 * rate]))
        // Each analysed frame's faces hold until the next; an empty group at the end (10 s)
        // may say they are gone.
        let faces = messages.filter { $0.kind == .faces && $0.time!.seconds < 10 }
        let analysed = faces.map { Int(($0.time!.seconds * 30).rounded()) }
        #expect(analysed == Array(stride(from: 0, to: 300, by: 30 / rate)))
        #expect(faces.allSatisfy { ($0.faces ?? []).allSatisfy { $0.duration?.seconds == 1 / Double(rate) } })

        let file = try #require(try recordings(in: out).first)
        #expect(try decodedFrames(file) == 300)
        let documents = try exiftoolFaces(file)
        for message in messages where message.kind == .faces && !(message.faces ?? []).isEmpty {
            let key = Int((message.time!.seconds * 30).rounded())
            #expect(documents[key]?.ids == message.faces!.map(\.faceID), "frame \(key)")
        }
        #expect(!outcome.stderrLines.contains { $0.contains("\"late\"") }, "\(outcome.stderrLines)")
    }

    /// Pass-through: an H.264 file's packets are recorded byte for byte, not re-encoded.
    @Test func passThroughRecordsTheSameBytes() throws {
        let out = directory.file("pass")
        let outcome = try cli.sightline(
            ["run", "--record", out, "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"], timeout: 60)
        #expect(outcome.status == 0, "\(outcome.stderrLines)")
        let file = try #require(try recordings(in: out).first)
        let movie = try MovieReader(path: file)
        let reader = try EncodedVideoReader(url: SampleMedia.faces640x480.path)
        var index = 0
        while let packet = try reader.next() {
            #expect(try movie.readSample(movie.tracks[0].samples[index]) == packet.data, "packet \(index)")
            index += 1
        }
        #expect(index == 300 && movie.tracks[0].samples.count == 300)
    }

    /// Two processes, as across two hosts: `run` publishes video only once `record` subscribes.
    @Test func recordInAnotherProcess() throws {
        let port = Endpoint.freeLoopbackPort()
        let out = directory.file("two")
        let recorder = try Background([
            "record", "--connect", "tcp://127.0.0.1:\(port)", "--out", out, "--until-stopped",
        ])
        let run = try cli.sightline(
            [
                "run", "--realtime", "--every-frame", "--publish", "tcp://127.0.0.1:\(port)",
                "--wait-for-subscriber", "30",
            ], timeout: 60)
        #expect(run.status == 0)
        let status = recorder.wait(timeout: 20)
        #expect(status == 0)
        let file = try #require(try recordings(in: out).first)
        #expect(recorder.stdout == file + "\n")
        #expect(try decodedFrames(file) == 300)
        // Every frame analysed (a busy machine drops none): the 294 frames with faces.
        #expect(try exiftoolFaces(file).count == 294)
    }

    /// A network endpoint with CURVE: `sightline record` holding an allowed key records the
    /// run; `sightline events` with an unknown key receives nothing.
    @Test func curveKeysDecideWhoReceives() throws {
        let keys = directory.file("keys")
        for (folder, name) in [(keys, "server"), ("\(keys)/allowed", "recorder"), (keys, "stranger")] {
            #expect(try cli.sightline(["keys", "generate", "--out", folder, "--name", name]).status == 0)
        }
        let port = Endpoint.freeLoopbackPort()
        let out = directory.file("curve")
        let recorder = try Background([
            "record", "--connect", "tcp://127.0.0.1:\(port)", "--out", out, "--until-stopped",
            "--curve-key", "\(keys)/allowed/recorder.key", "--server-key", "\(keys)/server.pub",
        ])
        let stranger = try Background([
            "events", "--connect", "tcp://127.0.0.1:\(port)", "--idle-timeout", "15",
            "--curve-key", "\(keys)/stranger.key", "--server-key", "\(keys)/server.pub",
        ])
        let run = try cli.sightline(
            [
                "run", "--realtime", "--publish", "tcp://127.0.0.1:\(port)", "--wait-for-subscriber", "30",
                "--curve-key", "\(keys)/server.key", "--allow", "\(keys)/allowed",
            ], timeout: 60)
        #expect(run.status == 0, "\(run.stderrLines)")
        #expect(recorder.wait(timeout: 20) == 0)
        let file = try #require(try recordings(in: out).first)
        #expect(try decodedFrames(file) == 300)
        #expect(stranger.wait(timeout: 30) == 0)
        #expect(stranger.stdout.isEmpty)
    }

    /// `kill -9` in the middle of a file, then a restart: the file is recovered with every
    /// complete fragment (2 s each) and decodes.
    @Test func aKilledRecorderIsRecoveredOnRestart() throws {
        let port = Endpoint.freeLoopbackPort()
        let out = directory.file("killed")
        let recorder = try Background(["record", "--connect", "tcp://127.0.0.1:\(port)", "--out", out])
        let run = try Background([
            "run", "--realtime", "--publish", "tcp://127.0.0.1:\(port)", "--wait-for-subscriber", "30",
        ])
        // Killed once two fragments are complete (a third has begun), however long a busy
        // machine takes to get there.
        let deadline = Date().addingTimeInterval(40)
        while Date() < deadline, fragmentHeaders(in: out) < 3 { Thread.sleep(forTimeInterval: 0.05) }
        kill(recorder.process.processIdentifier, SIGKILL)
        _ = recorder.wait(timeout: 5)
        kill(run.process.processIdentifier, SIGINT)
        _ = run.wait(timeout: 10)
        let file = try #require(try recordings(in: out).first)
        #expect(try MovieReader(path: file).isFragmented)

        let restart = try cli.sightline(
            ["record", "--connect", "tcp://127.0.0.1:\(port)", "--out", out], signal: (SIGTERM, after: 1.5))
        #expect(restart.status == 0, "\(restart.stderrLines)")
        #expect(restart.stderrLines.contains { $0.contains("recovered an unfinished recording") })
        let movie = try MovieReader(path: file)
        #expect(!movie.isFragmented)
        let frames = movie.tracks[0].samples.count
        // Key frames every 2 s: whole fragments of 60 frames survive, at least two of them.
        #expect(frames >= 120 && frames % 60 == 0, "\(frames) frames")
        #expect(try decodedFrames(file) == frames)
    }

    /// Lost video messages: the broken group of pictures is dropped, recording resumes at
    /// the next key frame, and the file decodes without an error.
    @Test func aGapDropsTheBrokenGroupOfPictures() async throws {
        let received = try await publishedMessages(source: "gap")
        let recorder = try Recorder(
            configuration: RecorderConfiguration(sourceID: "gap", directory: directory.file("gap")), logger: logger)
        var videoIndex = 0
        for message in received {
            if message.message.kind == .video {
                defer { videoIndex += 1 }
                if (70..<75).contains(videoIndex) { continue }  // lost on the way
            }
            recorder.handle(message)
        }
        recorder.finish()
        let counters = recorder.counters
        #expect(counters.gaps == 1 && counters.messagesLost == 5)
        // Key frames at 0, 60, 120 …: frames 75-119 belong to the broken group.
        #expect(counters.framesDropped == ["gap": 45])
        #expect(counters.framesWritten == 250)
        #expect(try decodedFrames(counters.files[0]) == 250)

        // A malformed message is refused, and the file stays valid.
        let second = try Recorder(
            configuration: RecorderConfiguration(sourceID: "gap", directory: directory.file("gap2")), logger: logger)
        for (index, message) in received.enumerated() {
            second.handle(message)
            if index == 40 {
                var bad = message.message
                bad.kind = .video
                bad.seq = 0
                bad.video = VideoPacketInfo(keyFrame: true, decodeTime: .zero, duration: nil, width: 0, height: 0)
                second.handle(ReceivedMessage(topic: "video/gap/", message: bad, json: [], payload: [1, 2, 3]))
            }
        }
        second.finish()
        #expect(second.counters.framesDropped["malformed"] == 1)
        #expect(try decodedFrames(second.counters.files[0]) > 0)
    }

    /// Files rotate at the first key frame past the segment length; together they hold
    /// every frame, each file decodes on its own, and faces on screen at a cut are in both.
    @Test func segmentsRotateOnKeyFrames() async throws {
        let received = try await publishedMessages(source: "seg")
        var configuration = RecorderConfiguration(sourceID: "seg", directory: directory.file("seg"))
        configuration.segmentDuration = MediaTime(value: 3, timescale: 1)
        let recorder = try Recorder(configuration: configuration, logger: logger)
        for message in received { recorder.handle(message) }
        recorder.finish()
        let files = recorder.counters.files
        #expect(files.count == 3)
        #expect(Set(files).count == 3)
        let frames = try files.map { try MovieReader(path: $0).tracks[0].samples.count }
        #expect(frames == [120, 120, 60])  // key frames every 2 s: cuts at 4 s and 8 s
        for (file, count) in zip(files, frames) { #expect(try decodedFrames(file) == count) }
        for file in files.dropFirst() {
            let first = try MovieReader(path: file).metadataGroups(track: 2).first
            #expect(first?.time == .zero && first?.items.isEmpty == false, "\(file) starts with the faces on screen")
        }
    }

    /// A metadata identifier first seen while a file is open starts a new file at the next
    /// key frame, which begins with its value; every frame is in one of the two files.
    @Test func aNewMetadataIdentifierStartsANewFile() async throws {
        let received = try await publishedMessages(source: "late")
        let recorder = try Recorder(
            configuration: RecorderConfiguration(sourceID: "late", directory: directory.file("late")), logger: logger)
        var videoIndex = 0
        for message in received {
            recorder.handle(message)
            guard message.message.kind == .video else { continue }
            videoIndex += 1
            if videoIndex == 90, let time = message.message.time {  // frame 89, at 2.97 s
                let item = ClientMetadataItem(
                    identifier: MetadataIdentifier.locationISO6709, dataType: "com.apple.quicktime.location.ISO6709",
                    value: .string("+48.8584+002.2945/"))
                var late = Message(
                    kind: .metadata, source: "late", time: time, wallTimeNs: 1,
                    metadata: ClientMetadataGroup(input: "gps", items: [item]))
                late.seq = 0
                recorder.handle(ReceivedMessage(topic: "metadata/late/", message: late, json: [], payload: nil))
            }
        }
        recorder.finish()
        let files = recorder.counters.files
        #expect(files.count == 2)
        let movies = try files.map { try MovieReader(path: $0) }
        #expect(movies.map { $0.tracks[0].samples.count } == [120, 180])  // cut at the key frame at 4 s
        #expect(movies[0].tracks.count == 2 && movies[1].tracks.count == 3)
        let location = try #require(movies[1].tracks.last)
        let first = try movies[1].metadataGroups(track: location.id).first
        #expect(first?.time == .zero && first?.items.first?.value == .string("+48.8584+002.2945/"))
    }

    /// A source that stops and is opened again (`serve` re-opens a failed one) may start its
    /// clock again, and has found no face yet: its second file holds all its frames and its
    /// own faces, none of those on screen when the first run stopped.
    @Test func aSourceOpenedAgainIsRecordedOnItsNewClock() async throws {
        let received = try await publishedMessages(source: "again")
        let recorder = try Recorder(
            configuration: RecorderConfiguration(sourceID: "again", directory: directory.file("again")), logger: logger)
        var stopped = Message(
            kind: .status, source: "again", time: nil, wallTimeNs: 1, status: SourceStatus(state: .stopped))
        stopped.seq = 0
        let video = received.indices.filter { received[$0].message.kind == .video }
        let start = try #require(received[video[0]].message.time)
        let second = MediaTime(value: 1, timescale: 1)
        // Two hours into a run, stopped after 150 frames with faces on screen; then the run
        // again from 0, its first second's faces not found yet.
        let runs = [(received[..<video[150]], MediaTime(value: 7200, timescale: 1)), (received[...], .zero)]
        for (run, shift) in runs {
            for received in run {
                var message = received.message
                if shift == .zero, message.kind == .faces, let time = message.time, time - start < second { continue }
                message.time = message.time.map { $0 + shift }
                if let decodeTime = message.video?.decodeTime { message.video?.decodeTime = decodeTime + shift }
                recorder.handle(
                    ReceivedMessage(topic: received.topic, message: message, json: [], payload: received.payload))
            }
            recorder.handle(ReceivedMessage(topic: "status/again/", message: stopped, json: [], payload: nil))
        }
        let files = recorder.counters.files
        try #require(files.count == 2)
        #expect(try files.map { try MovieReader(path: $0).tracks[0].samples.count } == [150, 300])
        let faces = try files.map { try MovieReader(path: $0).metadataGroups(track: 2).filter { !$0.items.isEmpty } }
        let end = MediaTime(value: 4, timescale: 1)
        #expect(faces[0].last.map { end < $0.time } == true, "faces on screen as the first run stops")
        let again = faces[1].filter { $0.time < end }
        let before = faces[0].filter { second <= $0.time && $0.time < end }
        #expect(again.count > 80 && again.map(\.time) == before.map(\.time), "\(again.prefix(1))")
        #expect(again.map(\.items) == before.map(\.items))
        #expect(recorder.counters.metadataDropped.isEmpty, "\(recorder.counters.metadataDropped)")
    }

    /// The sample's messages as a subscriber receives them, with video always on.
    func publishedMessages(source: String) async throws -> [ReceivedMessage] {
        let endpoint = try Endpoint("inproc://recorder-test-\(source)")
        var configuration = PipelineConfiguration(source: SampleMedia.faces640x480.path)
        configuration.sourceID = source
        configuration.bus.publishing = .bind(endpoint)
        configuration.video.mode = .always
        configuration.bus.waitForSubscriber = .seconds(20)
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: [.video, .faces], source: source))
        _ = try await pipeline.runToCompletion()
        let messages = try subscriber.collect { $0.filter { $0.message.kind == .video }.count >= 300 }
        #expect(messages.filter { $0.message.kind == .video }.count == 300)
        return messages
    }

    /// A small file system that fills up: `--min-free` pauses recording cleanly, and a write
    /// that fails anyway leaves a file that is valid up to its last fragment.
    @Test(.enabled(if: SmallFileSystem.canMount)) func aFullDiskPausesRecordingAndKeepsTheFile() throws {
        let disk = try SmallFileSystem(kilobytes: 1024)
        // Fragments end on the sample's key frames, every 2 s and about 75K each: free space
        // falls below 900K by the second fragment, whichever key frame the check sees first.
        let limited = try cli.sightline(
            [
                "run", "--realtime", "--record", disk.path, "--min-free", "900K", "--fragment", "0.5", "--publish",
                "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ],
            timeout: 60)
        #expect(
            limited.stderrLines.contains {
                $0.contains("recording paused: only") && $0.contains("MiB free in \(disk.path)")
            })
        let file = try #require(try recordings(in: disk.path).first)
        let movie = try MovieReader(path: file)
        #expect(!movie.isFragmented && movie.tracks[0].samples.count > 0)
        #expect(try decodedFrames(file) == movie.tracks[0].samples.count)

        let full = try SmallFileSystem(kilobytes: 200)
        let failing = try cli.sightline(
            [
                "run", "--record", full.path, "--min-free", "0", "--fragment", "0.5", "--publish",
                "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ],
            timeout: 60)
        #expect(failing.stderrLines.contains { $0.contains("No space left on device") })
        let cut = try #require(try recordings(in: full.path).first)
        let kept = try MovieReader(path: cut)
        #expect(kept.warnings.isEmpty && kept.tracks[0].samples.count > 0)
        #expect(try decodedFrames(cut) == kept.tracks[0].samples.count)
    }

    /// Paused below the minimum free space, recording resumes at the first key frame once
    /// there is room again, in a new file; the frames in between are counted, not lost
    /// silently. The key frames are every 2 s, so each pause and resume falls on one.
    @Test(.enabled(if: SmallFileSystem.canMount)) func recordingResumesWhenThereIsRoomAgain() async throws {
        let received = try await publishedMessages(source: "room")
        let disk = try SmallFileSystem(kilobytes: 1024)
        var configuration = RecorderConfiguration(sourceID: "room", directory: disk.path)
        configuration.minimumFreeSpace = 1024 * 1024 - 100 * 1024  // about one 2 s group of pictures
        let recorder = try Recorder(configuration: configuration, logger: logger)
        var freed: [String] = []
        for message in received {
            recorder.handle(message)
            if recorder.pausedReason != nil, freed.isEmpty {
                // What an operator (or retention) does: the finished file goes elsewhere.
                freed = try recordings(in: disk.path)
                for file in freed { try FileManager.default.removeItem(atPath: file) }
            }
        }
        recorder.finish()
        #expect(freed.count == 1)
        let files = recorder.counters.files
        #expect(files.count >= 2, "\(files)")
        #expect(recorder.counters.framesDropped["diskFull", default: 0] > 0, "\(recorder.counters.framesDropped)")
        #expect(recorder.failureReason == nil)
        let last = try #require(files.last)
        let movie = try MovieReader(path: last)
        #expect(!movie.isFragmented && movie.tracks[0].samples[0].isSync && movie.tracks[0].samples.count >= 60)
        #expect(try decodedFrames(last) == movie.tracks[0].samples.count)
    }

    /// A turned source records turned, as an iPhone does: the video track's matrix and an
    /// orientation track (int16 EXIF value) from the first frame, read back by ffprobe and
    /// exiftool too. The source's display matrix says so, or `--orientation` for a camera
    /// mounted turned; frames and detections stay as stored.
    @Test func aTurnedSourceRecordsItsMatrixAndAnOrientationTrack() throws {
        let fixture = CommandLineTests.movieTests.appendingPathComponent("Fixtures/iphone-layout.mov").path
        for (arguments, expected) in [
            (["--source", fixture], 6),
            (["--source", SampleMedia.faces640x480.path, "--orientation", "3"], 3),
        ] {
            let out = directory.file("turned-\(expected)")
            let run = try cli.sightline(
                ["run"] + arguments + [
                    "--record", out, "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
                ])
            #expect(run.status == 0, "\(run.stderrLines)")
            let file = try #require(try recordings(in: out).first)
            let movie = try MovieReader(path: file)
            let video = try #require(movie.tracks.first { $0.mediaType == "vide" })
            #expect(video.orientation == expected)
            let track = try #require(movie.tracks.first { $0.metadataFormat == .videoOrientation })
            let groups = try movie.metadataGroups(track: track.id)
            #expect(groups.first?.time == .zero)
            // One value held for the whole file (continued in each fragment).
            #expect(!groups.isEmpty && groups.allSatisfy { $0.items.first?.value == .int(Int64(expected)) })
            let rotation = try ExternalTool.run(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries", "stream_side_data=rotation",
                    "-of", "csv=p=0", file,
                ])
            #expect(rotation.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == (expected == 6 ? "-90" : "-180"))
            let exif = try ExternalTool.run("exiftool", ["-ee", "-n", "-VideoOrientation", file])
            #expect(exif.stdout.contains(": \(expected)"), "\(exif.stdout)")
        }
        try cli.expectOneLineError(
            ["run", "--orientation", "9"], mentioning: "--orientation 9 is not an EXIF orientation 1-8")
    }

    func decodedFrames(_ path: String) throws -> Int {
        let output = try ExternalTool.run(
            "ffmpeg", ["-v", "error", "-xerror", "-i", path, "-map", "0:v:0", "-f", "framemd5", "-"])
        guard output.status == 0 else { return -1 }
        return output.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
    }

    /// exiftool's face samples by frame number (30 fps): IDs and bounds in order.
    func exiftoolFaces(_ path: String) throws -> [Int: (ids: [Int], bounds: [[Float]])] {
        let output = try ExternalTool.run("exiftool", ["-ee", "-G3", "-a", "-n", "-s", path])
        var documents: [String: (time: Double, ids: [Int], bounds: [[Float]])] = [:]
        for line in output.stdout.split(separator: "\n") where line.hasPrefix("[Doc") {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let colon = parts[1].range(of: ": ") else { continue }
            let tag = parts[1][..<colon.lowerBound].trimmingCharacters(in: .whitespaces)
            let value = String(parts[1][colon.upperBound...])
            var document = documents[String(parts[0])] ?? (0, [], [])
            switch tag {
            case "SampleTime": document.time = Double(value) ?? -1
            case "DetectedFaceID": document.ids.append(Int(value) ?? -1)
            case "DetectedFaceBounds": document.bounds.append(value.split(separator: " ").compactMap { Float($0) })
            default: break
            }
            documents[String(parts[0])] = document
        }
        var byFrame: [Int: (ids: [Int], bounds: [[Float]])] = [:]
        for document in documents.values where !document.ids.isEmpty {
            byFrame[Int((document.time * 30).rounded())] = (document.ids, document.bounds)
        }
        return byFrame
    }
}

/// A `sightline` process running beside the test.
final class Background {
    let process = Process()
    private let output = Pipe()
    private(set) var stdout = ""

    init(_ arguments: [String]) throws {
        var url = CommandLineTests.executable
        if !FileManager.default.isExecutableFile(atPath: url.path) {
            url = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("sightline")
        }
        process.executableURL = url
        process.arguments = arguments + ["--log-level", "warning"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Waits for the exit; the exit status, or nil if it had to be killed.
    func wait(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return process.terminationStatus
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}
