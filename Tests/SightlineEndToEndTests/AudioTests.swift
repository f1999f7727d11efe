import Foundation
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineMovie
import SightlinePipeline
import SightlineRecorder
import SightlineTesting
import Testing

/// The clips tools/make-audio-media.sh writes (a flash and a tone burst at 1, 2, 3, 4 and
/// 5 s), made once per test run; lazily, so that suites that do not need them pay nothing.
private let audioMedia: Result<String, any Error> = Result {
    let directory = NSTemporaryDirectory() + "sightline-audio-media-\(getpid())"
    let made = try ExternalTool.run(ExternalTool.checkout.path + "/tools/make-audio-media.sh", [directory])
    guard made.status == 0 else { throw SightlineError.invalidArgument("make-audio-media.sh: \(made.stderr)") }
    return directory
}

/// Audio end to end: clips made with FFmpeg, recorded by the real `sightline`, and checked
/// with ffprobe, ffmpeg and exiftool; audio and video must stay within one video frame.
@Suite struct AudioTests {
    let cli = CommandLineTests()
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory("audio") }

    func clip(_ name: String) throws -> String { try audioMedia.get() + "/" + name }

    /// What ffprobe says of a file's first audio stream.
    struct AudioStream {
        var codec: String
        var sampleRate: Int
        var channels: Int
        var duration: Double
        var frames: Int
    }

    func audioStream(_ path: String) throws -> AudioStream? {
        let json = try ExternalTool.json(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "a:0", "-count_packets", "-show_entries",
                "stream=codec_name,codec_tag_string,sample_rate,channels,duration,nb_read_packets", "-of", "json", path,
            ])
        guard let stream = ((json as? [String: Any])?["streams"] as? [[String: Any]])?.first else { return nil }
        return AudioStream(
            codec: stream["codec_name"] as? String ?? "", sampleRate: Int(stream["sample_rate"] as? String ?? "") ?? 0,
            channels: stream["channels"] as? Int ?? 0, duration: Double(stream["duration"] as? String ?? "") ?? 0,
            frames: Int(stream["nb_read_packets"] as? String ?? "") ?? 0)
    }

    /// The flashes, the tone onsets and each onset minus its flash, in seconds, as
    /// tools/av-sync.py measures them.
    func syncOffsets(_ path: String) throws -> (flashes: [Double], onsets: [Double], offsets: [Double]) {
        let output = try ExternalTool.run("python3", [ExternalTool.checkout.path + "/tools/av-sync.py", path])
        try #require(output.status == 0, "av-sync.py: \(output.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: [Double]])
        return (json["flashes"] ?? [], json["onsets"] ?? [], json["offsets"] ?? [])
    }

    /// The audio decodes with FFmpeg stopping at the first error.
    func audioDecodes(_ path: String) throws -> Bool {
        try ExternalTool.run("ffmpeg", ["-v", "error", "-xerror", "-i", path, "-map", "0:a:0", "-f", "null", "-"])
            .status == 0
    }

    /// Records `source` with `sightline run --record`; the recordings, the final status and stderr.
    /// `interruptWhen`: a live stream never ends by itself; the run is stopped with SIGINT
    /// once stderr says this.
    func record(_ source: String, _ extra: [String] = [], name: String = "out", interruptWhen: String? = nil) throws
        -> (
            files: [String], input: InputDescription?, counters: PipelineCounters, stderr: [String]
        )
    {
        let out = directory.file(name)
        let outcome = try cli.sightline(
            [
                "run", "--source", source, "--record", out, "--print", "--detect", "barcodes", "--publish",
                "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
            ] + extra, timeout: 120, interruptWhen: interruptWhen)
        try #require(outcome.status == 0, "\(outcome.stderrLines)")
        let statuses = try outcome.stdout.split(separator: "\n").compactMap {
            try JSONDecoder().decode(Message.self, from: Data($0.utf8)).status
        }
        let status = try #require(statuses.last)
        let files = try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.hasSuffix(".mov") }.sorted()
            .map { "\(out)/\($0)" }
        return (files, statuses.first?.input, try #require(status.counters), outcome.stderrLines)
    }

    /// A value of the recorder's "recorder stopped" log line (`audioJumps=1`).
    func recorderLog(_ key: String, in stderr: [String]) -> String? {
        guard let line = stderr.first(where: { $0.contains("recorder stopped") }),
            let range = line.range(of: " \(key)=")
        else { return nil }
        return String(line[range.upperBound...].prefix { $0 != " " })
    }

    /// Every codec a camera or a file sends: AAC passed through, the others encoded to AAC
    /// at their own rate; each recording holds 6 s of AAC that decodes, exiftool lists the
    /// track, and each tone starts within one video frame of its flash.
    @Test(arguments: [
        ("sync_aac.mp4", "pass", 48000, 2), ("sync_adts.ts", "pass", 48000, 2), ("sync_mulaw.mov", "aac", 8000, 1),
        ("sync_alaw.mov", "aac", 8000, 1), ("sync_opus.mp4", "aac", 48000, 2), ("sync_mp3.mp4", "aac", 44100, 2),
        ("sync_pcm.mov", "aac", 22050, 2),
    ])
    func recordsAudioInSync(name: String, handling: String, rate: Int, channels: Int) throws {
        let recorded = try record(try clip(name))
        #expect(recorded.input?.audio?.handling.rawValue == handling)
        let audio = try #require(recorded.counters.audio)
        #expect(audio.skipped.isEmpty && audio.timestampJumps == 0)
        let file = try #require(recorded.files.first)
        #expect(recorded.files.count == 1)

        let stream = try #require(try audioStream(file), "no audio stream in \(file)")
        #expect(stream.codec == "aac" && stream.sampleRate == rate && stream.channels == channels)
        #expect(abs(stream.duration - 6) < 0.05, "audio lasts \(stream.duration) s")
        #expect(stream.frames == audio.packets)
        #expect(try audioDecodes(file))
        #expect(try IndependentReaders.decodedFrames(file) == 180)

        let sync = try syncOffsets(file)
        #expect(sync.flashes == [1, 2, 3, 4, 5])
        #expect(sync.offsets.count == 5 && sync.offsets.allSatisfy { abs($0) <= 1.0 / 30 }, "\(sync.offsets)")

        let exif = try ExternalTool.run("exiftool", ["-ee", "-G3", "-a", file]).stdout
        #expect(exif.contains("Audio Format                    : mp4a"))
        #expect(exif.contains("Audio Sample Rate               : \(rate)"))
    }

    /// AAC is passed through untouched: every packet's bytes are the source's, from MP4 and
    /// from MPEG-TS (whose ADTS headers FFmpeg's own filter removes on both sides).
    @Test(arguments: ["sync_aac.mp4", "sync_adts.ts"]) func passedThroughAACIsByteIdentical(name: String) throws {
        let source = try clip(name)
        let file = try #require(try record(source, ["--audio", "pass"]).files.first)
        func packetHashes(_ path: String) throws -> [String] {
            let output = try ExternalTool.run(
                "ffmpeg",
                [
                    "-v", "error", "-i", path, "-map", "0:a:0", "-c", "copy", "-bsf:a", "aac_adtstoasc", "-f",
                    "framemd5",
                    "-",
                ])
            // Columns: stream, dts, pts, duration, size, hash, then side data (which differs
            // with the container, as the times do).
            return output.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
                $0.split(separator: ",")[5].trimmingCharacters(in: .whitespaces)
            }
        }
        let original = try packetHashes(source)
        #expect(original.count > 250)
        #expect(try packetHashes(file) == original)
    }

    /// Files cut every 2 s: each has its AAC track, together they hold every frame, and
    /// each file's tone starts with its flash.
    @Test func segmentsAreCutAtTheVideosKeyFramesWithTheirAudio() throws {
        let recorded = try record(try clip("sync_aac.mp4"), ["--segment", "2"])
        #expect(recorded.files.count == 3)
        var audioFrames = 0
        for file in recorded.files {
            let stream = try #require(try audioStream(file))
            #expect(stream.codec == "aac" && abs(stream.duration - 2) < 0.05, "\(file): \(stream.duration) s")
            audioFrames += stream.frames
            #expect(try audioDecodes(file))
            let sync = try syncOffsets(file)
            #expect(!sync.flashes.isEmpty && sync.offsets.allSatisfy { abs($0) <= 1.0 / 30 }, "\(file): \(sync)")
        }
        #expect(audioFrames == recorded.counters.audio?.packets)
        #expect(recorderLog("audioWritten", in: recorded.stderr) == "\(audioFrames)")
    }

    /// A network stream, as a camera's RTSP or HTTP feed arrives: MPEG-TS with ADTS AAC served
    /// live over HTTP by ffmpeg; the recording keeps the sound in sync. The stream's end is an
    /// outage, not an end: the run goes on reconnecting until it is stopped.
    @Test func aNetworkStreamsAudioIsRecordedInSync() throws {
        let port = Endpoint.freeLoopbackPort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = [
            "ffmpeg", "-nostdin", "-v", "error", "-re", "-i", try clip("sync_adts.ts"), "-c", "copy", "-f", "mpegts",
            "-listen", "1", "http://127.0.0.1:\(port)/live.ts",
        ]
        try server.run()
        // SIGKILL: `terminate()`'s SIGTERM is blocked in a process started from a Dispatch
        // thread (swift-corelibs-foundation#4772).
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        // Connect only once it listens: a probe would take its one client's place.
        let listening = String(format: ":%04X 00000000:0000 0A", port)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline,
            !((try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? "").contains(listening)
        {
            Thread.sleep(forTimeInterval: 0.05)
        }
        let recorded = try record(
            "http://127.0.0.1:\(port)/live.ts", ["--network-timeout", "5"], interruptWhen: "source interrupted")
        #expect(recorded.input?.audio?.handling == .pass)
        let file = try #require(recorded.files.first)
        let stream = try #require(try audioStream(file))
        #expect(stream.codec == "aac" && stream.sampleRate == 48000 && abs(stream.duration - 6) < 0.1)
        #expect(try audioDecodes(file))
        let sync = try syncOffsets(file)
        #expect(sync.offsets.count == 5 && sync.offsets.allSatisfy { abs($0) <= 1.0 / 30 }, "\(sync)")
    }

    /// Audio that stops at 3 s while the video goes on to 6 s: the sound track ends there,
    /// every video frame is recorded.
    @Test func audioThatStopsEndsItsTrackAndTheVideoGoesOn() throws {
        let recorded = try record(try clip("short_audio.mp4"))
        let file = try #require(recorded.files.first)
        let stream = try #require(try audioStream(file))
        #expect(abs(stream.duration - 3) < 0.05)
        #expect(try IndependentReaders.decodedFrames(file) == 180)
        let movie = try MovieReader(path: file)
        #expect(movie.tracks[0].mediaDuration.seconds > 5.9)
        #expect(try syncOffsets(file).offsets.count == 2)
    }

    /// Audio timestamps that jump 2 s forward, or step 0.5 s back, in an MPEG-TS stream:
    /// counted at the source and in the recorder, every sample keeps a positive duration,
    /// and the audio decodes.
    @Test(arguments: [("forward", "PTS+gte(T\\,3)*2/TB"), ("back", "PTS-gte(T\\,3)*0.5/TB")])
    func audioTimestampJumpsAreCountedAndEvenedOut(name: String, expression: String) throws {
        let source = directory.file("jump_\(name).ts")
        let made = try ExternalTool.run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-y", "-i", try clip("sync_aac.mp4"), "-c:v", "copy", "-af",
                "asetpts='\(expression)'", "-c:a", "aac", "-f", "mpegts", source,
            ])
        try #require(made.status == 0, "\(made.stderr)")
        let recorded = try record(source)
        #expect(recorded.counters.audio?.timestampJumps == 1)
        #expect(recorderLog("audioJumps", in: recorded.stderr) == "1")
        let file = try #require(recorded.files.first)
        let sound = try #require(try MovieReader(path: file).tracks.first { $0.mediaType == "soun" })
        #expect(sound.samples.count > 200 && sound.samples.allSatisfy { $0.duration > 0 })
        #expect(try audioDecodes(file))
        #expect(try IndependentReaders.decodedFrames(file) == 180)
    }

    /// A stream whose audio timestamps jump a minute ahead at 3 s (another clock): the sound
    /// after the jump goes on from where it was, all of it recorded, though it could never
    /// wait for video that far ahead.
    @Test func audioJumpingFarAheadIsTimedOnFromWhereItWas() throws {
        let source = directory.file("jump_minute.ts")
        let made = try ExternalTool.run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=black:s=320x240:r=30:d=20", "-f",
                "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=20", "-c:v", "libx264", "-threads", "1",
                "-preset", "veryfast", "-g", "30", "-pix_fmt", "yuv420p", "-af", "asetpts='PTS+gte(T\\,3)*60/TB'",
                "-c:a", "aac", "-f", "mpegts", source,
            ])
        try #require(made.status == 0, "\(made.stderr)")
        let recorded = try record(source)
        #expect(recorderLog("audioJumps", in: recorded.stderr) == "1")
        #expect(recorderLog("audioDropped", in: recorded.stderr) == "[:]")
        let file = try #require(recorded.files.first)
        let sound = try #require(try MovieReader(path: file).tracks.first { $0.mediaType == "soun" })
        #expect(abs(sound.mediaDuration.seconds - 20) < 0.1, "the sound lasts \(sound.mediaDuration.seconds) s")
        #expect(try audioStream(file).map { abs($0.duration - 20) < 0.1 } == true)
        #expect(try audioDecodes(file))
    }

    /// A stream whose sound is away for 15 s (as a microphone unplugged) while the video
    /// goes on: the tones after the gap still start with their flashes, and the gap is
    /// silence in a sound track as long as the video.
    @Test func aLongAudioGapKeepsTheSoundInStep() throws {
        let recorded = try record(try clip("gap_audio.ts"))
        let file = try #require(recorded.files.first)
        #expect(recorded.files.count == 1)
        #expect(try IndependentReaders.decodedFrames(file) == 660)
        let stream = try #require(try audioStream(file))
        #expect(abs(stream.duration - 22) < 0.1, "audio lasts \(stream.duration) s")
        #expect(try audioDecodes(file))
        let sync = try syncOffsets(file)
        #expect(sync.flashes.count == 21)
        let heard = [1, 2, 3, 19, 20, 21].map(Double.init)
        #expect(sync.onsets.count == heard.count, "\(sync.onsets)")
        for (onset, second) in zip(sync.onsets, heard) {
            #expect(abs(onset - second) <= 1.0 / 30, "a tone at \(onset) s, its flash at \(second) s")
        }
    }

    /// The sound back after a long gap reaches the recorder only as it stops, past the last
    /// video frame it has (the video lagging the sound, as an encoder on a busy machine does):
    /// 1.5 s past it, the sound is still on the video's clock and the gap is kept; 12.5 s
    /// past it, it is another clock and goes on from where the sound was.
    @Test(arguments: [(17.0, 22.0, 15.0), (6.0, 7.0, 0.0)])
    func soundBackAfterTheLastVideoFrameKeepsItsClock(videoUntil: Double, soundSeconds: Double, gapSeconds: Double)
        async throws
    {
        let endpoint = try Endpoint("inproc://audio-gap-\(Int(videoUntil))")
        var configuration = PipelineConfiguration(source: try clip("gap_audio.ts"))
        configuration.sourceID = "gap"
        configuration.bus.publishing = .bind(endpoint)
        configuration.detection.detectors = [.codes]
        configuration.video.mode = .always
        configuration.bus.waitForSubscriber = .seconds(20)
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: [.video, .audio, .status], source: "gap"))
        _ = try await pipeline.runToCompletion()
        let received = try subscriber.collect { $0.last?.message.status?.state == .stopped }
        let videoTimes = received.filter { $0.message.kind == .video }.compactMap { $0.message.time?.seconds }
        try #require(videoTimes.count == 660)

        // The video after `videoUntil` never reaches the recorder; the stopped status finishes it.
        let recorder = try Recorder(
            configuration: RecorderConfiguration(sourceID: "gap", directory: directory.file("gap\(Int(videoUntil))")),
            logger: logger)
        for message in received {
            if message.message.kind == .video, let time = message.message.time?.seconds,
                time - videoTimes[0] > videoUntil
            {
                continue
            }
            recorder.handle(message)
        }
        let file = try #require(recorder.counters.files.first)
        #expect(recorder.counters.audioJumps == 1)
        // The sound track holds all the sound; it is shown for as long as the video.
        let sound = try #require(try MovieReader(path: file).tracks.first { $0.mediaType == "soun" })
        #expect(abs(sound.mediaDuration.seconds - soundSeconds) < 0.1, "the sound lasts \(sound.mediaDuration) s")
        let stream = try #require(try audioStream(file))
        #expect(abs(stream.duration - videoUntil) < 0.1, "ffprobe: the sound lasts \(stream.duration) s")
        #expect(try audioDecodes(file))
        // The frame before the gap lasts until the sound came back, or as long as it is.
        let longest = Double(sound.samples.map(\.duration).max() ?? 0) / Double(sound.timescale)
        #expect(abs(longest - max(gapSeconds, 1024.0 / 48000)) < 0.05, "the longest audio frame lasts \(longest) s")
    }

    /// A stream whose audio is damaged: what cannot be decoded is counted, the video and
    /// the rest of the audio are recorded.
    @Test func undecodableAudioIsCountedAndTheVideoGoesOn() throws {
        let source = directory.file("damaged.mp4")
        let made = try ExternalTool.run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-y", "-i", try clip("sync_mp3.mp4"), "-c", "copy", "-bsf:a",
                "noise=amount=20", source,
            ])
        try #require(made.status == 0, "\(made.stderr)")
        let recorded = try record(source)
        let audio = try #require(recorded.counters.audio)
        #expect((audio.skipped["undecodable"] ?? 0) > 0, "\(audio)")
        #expect(audio.packets > 100)
        let file = try #require(recorded.files.first)
        #expect(try IndependentReaders.decodedFrames(file) == 180)
        #expect(try audioDecodes(file))
    }

    /// `kill -9` while recording in real time, then `sightline recover`: the sound track of
    /// every complete fragment survives, decodes and stays in sync.
    @Test func aKilledRecordingKeepsItsAudio() throws {
        let out = directory.file("killed")
        let run = try Background([
            "run", "--source", try clip("sync_aac.mp4"), "--realtime", "--record", out, "--fragment", "1",
            "--detect", "barcodes", "--publish", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())",
        ])
        func fragments() -> Int {
            guard
                let name = try? FileManager.default.contentsOfDirectory(atPath: out).first(where: {
                    $0.hasSuffix(".mov")
                }),
                let movie = try? MovieReader(path: "\(out)/\(name)")
            else { return 0 }
            return movie.topLevelBoxes.filter { $0.type == "moof" }.count
        }
        // Killed once three fragments are complete (a fourth has begun), however long a
        // busy machine takes to get there.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, fragments() < 4 { Thread.sleep(forTimeInterval: 0.05) }
        kill(run.process.processIdentifier, SIGKILL)
        _ = run.wait(timeout: 5)
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: out).first { $0.hasSuffix(".mov") })
        let file = "\(out)/\(name)"

        let recovered = try cli.sightline(["recover", file])
        #expect(recovered.status == 0, "\(recovered.stderrLines)")
        let movie = try MovieReader(path: file)
        #expect(!movie.isFragmented)
        let sound = try #require(movie.tracks.first { $0.mediaType == "soun" })
        #expect(sound.format == "mp4a" && sound.samples.count > 100)
        let stream = try #require(try audioStream(file))
        #expect(stream.codec == "aac" && stream.duration >= 2.9)
        #expect(try audioDecodes(file))
        let sync = try syncOffsets(file)
        #expect(sync.flashes.count >= 2 && sync.offsets.allSatisfy { abs($0) <= 1.0 / 30 }, "\(sync)")
    }

    /// On the bus: one `audio` message per AAC frame when someone subscribes, with its
    /// format, time and duration, the payload the source's bytes, counted in the status.
    @Test func audioIsPublishedFrameByFrame() async throws {
        let endpoint = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        var configuration = PipelineConfiguration(source: try clip("sync_aac.mp4"))
        configuration.sourceID = "sound"
        configuration.bus.publishing = .bind(endpoint)
        configuration.detection.detectors = [.codes]
        configuration.bus.waitForSubscriber = .seconds(20)
        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        let subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: [.audio, .status], source: "sound"))
        let counters = try await pipeline.runToCompletion()
        let received = try subscriber.collect { $0.last?.message.status?.state == .stopped }
        let audio = received.filter { $0.message.kind == .audio }
        #expect(audio.count == counters.audio?.packets)
        #expect(audio.map(\.message.seq) == Array(0..<UInt64(audio.count)))

        let info = try #require(audio.first?.message.audio)
        #expect(info.format.codec == "aac" && info.format.sampleRate == 48000 && info.format.channels == 2)
        #expect(info.format.configBytes?.prefix(2) == [0x11, 0x90])  // AAC-LC, 48 kHz, 2 channels
        let times = audio.compactMap { $0.message.time?.seconds }
        #expect(times.count == audio.count && zip(times, times.dropFirst()).allSatisfy { $1 > $0 })

        // Sizes and durations are the source's packets' (the last one is shorter).
        let packets = try ExternalTool.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "a:0", "-show_entries", "packet=size,duration", "-of", "csv=p=0",
                try clip("sync_aac.mp4"),
            ]
        ).stdout.split(separator: "\n").map { $0.split(separator: ",").compactMap { Int($0) } }.filter { $0.count == 2 }
        #expect(audio.map { $0.payload?.count ?? 0 } == packets.map { $0[1] })
        #expect(audio.map { $0.message.audio?.duration.converted(to: 48000).value } == packets.map { Int64($0[0]) })
    }

    /// `--audio` asks for what the source cannot give: one line naming it, exit 1.
    @Test func audioModesTheSourceCannotGiveAreRefused() throws {
        let cases: [([String], String)] = [
            (
                ["--source", try clip("sync_mulaw.mov"), "--audio", "pass"],
                "--audio pass needs AAC; its audio is pcm_mulaw"
            ),
            (["--source", try clip("no_audio.mp4"), "--audio", "aac"], "--audio aac: it has no audio"),
            (
                ["--source", try clip("no_audio.mp4"), "--audio-device", "hw:0,0"],
                "--audio-device hw:0,0 goes with a camera"
            ),
        ]
        for (arguments, message) in cases {
            let outcome = try cli.sightline(["run"] + arguments)
            #expect(outcome.status != 0)
            #expect(
                outcome.stderrLines.count == 1 && outcome.stderrLines.first?.contains(message) == true, "\(outcome)")
        }
    }

    /// `--audio off` records the video alone.
    @Test func audioOffRecordsTheVideoAlone() throws {
        let recorded = try record(try clip("sync_aac.mp4"), ["--audio", "off"])
        #expect(recorded.input?.audio == nil && recorded.counters.audio == nil)
        let file = try #require(recorded.files.first)
        #expect(try audioStream(file) == nil)
        #expect(try IndependentReaders.decodedFrames(file) == 180)
    }

    /// A microphone that is not there: one line naming it and what this machine has. The
    /// microphone itself is tested inside vivid-run with snd-aloop (tools/test-microphone.py).
    @Test func aMissingMicrophoneIsNamed() throws {
        #expect {
            try Microphone(device: "hw:9,0", logger: logger)
        } throws: { error in
            "\(error)".hasPrefix("cannot open audio device hw:9,0: no such capture device; ")
        }
    }
}
