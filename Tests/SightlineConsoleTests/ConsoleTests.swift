import Foundation
import Logging
import SightlineBus
import SightlineCore
import SightlineHTTP
import SightlineMovie
import SightlineTesting
import Testing

@testable import SightlineConsole

/// The console's HTTP side against a real server, with recordings written by our own
/// `MovieWriter` (a known script of faces, a code, locations and an orientation).
@Suite struct ConsoleTests {
    let directory: TemporaryDirectory
    let recording: SampleRecording
    let name = "cam1-20261124T101500Z.mov"

    init() throws {
        directory = try TemporaryDirectory("console")
        recording = try SampleRecording()
        try recording.write(to: directory.file(name))
    }

    var configuration: ConsoleConfiguration {
        var configuration = ConsoleConfiguration()
        configuration.recordingDirectories = [directory.path]
        return configuration
    }

    @Test func theListSaysWhatEachRecordingHolds() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let reply = try await console.get("/api/recordings")
            let list = try #require(reply.json as? [[String: Any]])
            #expect(list.count == 1)
            let entry = try #require(list.first)
            #expect(entry["name"] as? String == name)
            #expect(entry["faces"] as? Int == 3)
            #expect(entry["codes"] as? Int == 1)
            #expect(entry["tracks"] as? [String] == ["video", "faces", "orientation", "location", "codes"])
            #expect(abs((entry["duration"] as? Double ?? 0) - 10) < 0.05)
            #expect(entry["start"] as? Double == 1_795_515_300)  // 2026-11-24T10:15:00Z, from the name
            #expect(entry["inProgress"] as? Bool == false)
        }
    }

    @Test func thePlayersMetadataIsTheFilesOwn() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let reply = try await console.get("/api/recordings/\(name)/metadata")
            #expect(reply.status == 200)
            let metadata = try #require(reply.json as? [String: Any])
            let video = try #require(metadata["video"] as? [String: Any])
            #expect(video["width"] as? Int == 640 && video["height"] as? Int == 480 && video["frames"] as? Int == 300)
            #expect(video["matrixOrientation"] as? Int == 1)

            // Every frame's faces, as written: IDs and bounds (float32 in the file).
            let groups = try #require(metadata["faces"] as? [[String: Any]])
            var checked = 0
            for (frame, time) in recording.frameTimes.enumerated() {
                let written = SampleRecording.faces(onFrame: frame)
                let group = groups.last { ($0["t"] as! Double) <= time.seconds + 1e-9 }
                let drawn = (group?["v"] as? [[String: Any]]) ?? []
                #expect(drawn.map { $0["id"] as? Int } == written.map(\.faceID), "frame \(frame)")
                #expect(drawn.map { $0["name"] as? String } == written.map(\.identity?.name), "frame \(frame)")
                for (object, face) in zip(drawn, written) {
                    let bounds = object["bounds"] as! [Double]
                    let expected = [face.bounds.x, face.bounds.y, face.bounds.width, face.bounds.height]
                    #expect(zip(bounds, expected).allSatisfy { abs($0 - $1) < 1e-6 }, "frame \(frame)")
                }
                checked += 1
            }
            #expect(checked == 300)

            // Values still valid at a fragment boundary are written again there: the same
            // value in a row is one value.
            func values<T: Equatable>(_ key: String, as: T.Type) -> [T?] {
                let all = ((metadata[key] as? [[String: Any]]) ?? []).map { $0["v"] as? T }
                return all.enumerated().filter { $0.offset == 0 || all[$0.offset - 1] != $0.element }.map(\.element)
            }
            #expect(values("location", as: String.self) == [SampleRecording.location1, SampleRecording.location2])
            #expect(values("orientation", as: Int.self) == [1])
            let codes = (metadata["codes"] as? [[String: Any]]) ?? []
            let firstCode = codes.compactMap { ($0["v"] as? [[String: Any]])?.first }.first
            let code = try #require(firstCode)
            #expect(code["text"] as? String == "https://example.com/sightline")
            #expect(code["type"] as? String == "qr")
            #expect(code["bounds"] as? [Double] == [0.1, 0.1, 0.2, 0.2])

            // When each face and the code are in view: the timeline's marks.
            let objects = try #require(metadata["objects"] as? [[String: Any]])
            let spans = objects.map { o -> String in
                let frames = [o["start"] as! Double, o["end"] as! Double].map { Int(($0 * 30).rounded()) }
                return "\(o["kind"]!) \(o["id"]!) \(frames[0])-\(frames[1])"
            }
            #expect(spans == ["face 1 30-200", "code 1 60-120", "face 2 90-200", "face 3 240-300"])
            #expect(
                objects.map { $0["text"] as? String } == [nil, "https://example.com/sightline", "Ada Lovelace", nil])
        }
    }

    /// The pages draw every kind from `kinds.js` and each object's `label`: a kind added in
    /// one file shows without a change to the pages.
    @Test func thePagesAreToldHowToDrawEachKind() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let script = String(decoding: try await console.get("/static/kinds.js").body, as: UTF8.self)
            #expect(
                script == """
                    sightline.kinds = [{"colour":"#00e050","name":"faces","objectName":"face","snapshots":true},\
                    {"colour":"#ffb000","name":"codes","objectName":"code","snapshots":false},\
                    {"colour":"#30a0ff","name":"detectedObjects","objectName":"object","snapshots":true}];

                    """)
            let metadata = try #require(
                try await console.get("/api/recordings/\(name)/metadata").json as? [String: Any])
            func labels(_ kind: String) -> Set<String> {
                let groups = (metadata[kind] as? [[String: Any]]) ?? []
                return Set(groups.flatMap { ($0["v"] as? [[String: Any]]) ?? [] }.compactMap { $0["label"] as? String })
            }
            #expect(labels("faces") == ["#1", "#2", "Ada Lovelace #2", "#3"])
            #expect(labels("codes") == ["https://example.com/sightline"])
        }
    }

    @Test func theMovieIsServedWithRangeRequests() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: directory.file(name)))
            let part = try await console.get("/media/\(name)", headers: ["Range": "bytes=1000-1999"])
            #expect(part.status == 206)
            #expect(part.body == bytes[1000..<2000])
            #expect(part.headers["content-range"] == "bytes 1000-1999/\(bytes.count)")
            #expect(part.headers["accept-ranges"] == "bytes")
            let tail = try await console.get("/media/\(name)", headers: ["Range": "bytes=\(bytes.count - 10)-"])
            #expect(tail.body == bytes.suffix(10))
            let whole = try await console.get("/media/\(name)")
            #expect(whole.status == 200 && whole.body == bytes)
        }
    }

    /// RFC 9110's ranges, against the running server: suffixes, ranges past the end (416
    /// with `bytes */size`), several ranges (one 206 covering them), and headers to ignore.
    @Test func rangesAreAnsweredAsRFC9110Says() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let bytes = try Data(contentsOf: URL(fileURLWithPath: directory.file(name)))
            let size = bytes.count
            let last = try await console.get("/media/\(name)", headers: ["Range": "bytes=-1"])
            #expect(last.status == 206 && last.body == bytes.suffix(1))
            #expect(last.headers["content-range"] == "bytes \(size - 1)-\(size - 1)/\(size)")
            let all = try await console.get("/media/\(name)", headers: ["Range": "bytes=-\(size * 2)"])
            #expect(all.status == 206 && all.body == bytes)
            for unsatisfiable in [
                "bytes=-0", "bytes=\(size)-", "bytes=\(size + 5)-\(size + 9)", "bytes=99999999999999999999-",
            ] {
                let reply = try await console.get("/media/\(name)", headers: ["Range": unsatisfiable])
                #expect(reply.status == 416, "\(unsatisfiable)")
                #expect(reply.headers["content-range"] == "bytes */\(size)", "\(unsatisfiable)")
            }
            let several = try await console.get("/media/\(name)", headers: ["Range": "bytes=10-19, 100-109"])
            #expect(several.status == 206 && several.body == bytes[10..<110])
            let clamped = try await console.get("/media/\(name)", headers: ["Range": "bytes=\(size - 4)-\(size + 100)"])
            #expect(clamped.status == 206 && clamped.body == bytes.suffix(4))
            for ignored in [
                "bytes=5-1", "items=0-1", "bytes=a-b", "bytes=", String(repeating: "bytes=0-0,", count: 100),
            ] {
                let reply = try await console.get("/media/\(name)", headers: ["Range": ignored])
                #expect(reply.status == 200 && reply.body == bytes, "\(ignored.prefix(20))")
            }
        }
    }

    @Test func byteRangesParseEveryForm() {
        #expect(ByteRanges(header: nil, size: 10) == .whole)
        #expect(ByteRanges(header: "bytes=0-0", size: 10) == .range(0...0))
        #expect(ByteRanges(header: "BYTES = 2-", size: 10) == .range(2...9))
        #expect(ByteRanges(header: "bytes=-3", size: 10) == .range(7...9))
        #expect(ByteRanges(header: "bytes=-0", size: 10) == .unsatisfiable)
        #expect(ByteRanges(header: "bytes=0-0", size: 0) == .unsatisfiable)
        #expect(ByteRanges(header: "bytes=-5", size: 0) == .unsatisfiable)
        #expect(ByteRanges(header: "bytes=10-", size: 10) == .unsatisfiable)
        #expect(ByteRanges(header: "bytes=10-20, 0-1", size: 10) == .range(0...1))
        #expect(ByteRanges(header: "bytes=0-1,,5-6", size: 10) == .range(0...6))
        #expect(ByteRanges(header: "bytes=0-99999999999999999999999", size: 10) == .range(0...9))
        for ignored in ["bytes=3-2", "bytes=--1", "bytes=1-2-3", "bytes=+1-2", "bytes", "bytes=,", "0-1"] {
            #expect(ByteRanges(header: ignored, size: 10) == .whole, "\(ignored)")
        }
        // Random headers: never a trap, and any range lies inside the content.
        var random = SplitMix(seed: 9110)
        let alphabet = Array("bytes=0123456789-, ")
        for _ in 0..<1000 {
            let header = String((0..<random.next(below: 30)).map { _ in alphabet[random.next(below: alphabet.count)] })
            let size = random.next(below: 50)
            if case .range(let range) = ByteRanges(header: header, size: size) {
                #expect(range.lowerBound >= 0 && range.upperBound < size, "\(header)")
            }
        }
    }

    @Test func pathsNeverLeaveTheRecordingsDirectories() async throws {
        let outside = try TemporaryDirectory("outside")
        try Data("TOP-SECRET-CONTENT".utf8).write(to: URL(fileURLWithPath: outside.file("secret.mov")))
        try FileManager.default.createSymbolicLink(
            atPath: directory.file("link-out.mov"), withDestinationPath: outside.file("secret.mov"))
        try FileManager.default.createSymbolicLink(
            atPath: directory.file("link-in.mov"), withDestinationPath: directory.file(name))
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            for path in [
                "/media/..%2Foutside%2Fsecret.mov", "/media/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/media/link-out.mov",
                "/media/%2Fetc%2Fpasswd", "/api/recordings/..%2Fsecret.mov/metadata",
                "/api/recordings/link-out.mov/metadata", "/api/recordings/%2e%2e/metadata",
                "/api/recordings/link-out.mov/snapshot?t=0", "/media/link-out.mov%00.mov",
            ] {
                let reply = try await console.get(path)
                #expect([400, 404].contains(reply.status), "\(path): \(reply.status)")
                #expect(!String(decoding: reply.body, as: UTF8.self).contains("TOP-SECRET"), "\(path)")
            }
            #expect(try await console.get("/media/link-in.mov", headers: ["Range": "bytes=0-7"]).status == 206)
            let names = (try await console.get("/api/recordings").json as? [[String: Any]])?.map {
                $0["name"] as? String
            }
            #expect(names?.contains("link-out.mov") == false)
        }
        #expect(throws: RecordingError.badName("../x.mov")) {
            try RecordingLibrary(directories: [directory.path]).path(of: "../x.mov")
        }
    }

    @Test func aBrokenRecordingIsAnErrorNotACrash() async throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: directory.file(name)))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: directory.file("cut-20261124T090000Z.mov")))
        try Data("not a movie at all".utf8).write(to: URL(fileURLWithPath: directory.file("garbage.mov")))
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            for broken in ["cut-20261124T090000Z.mov", "garbage.mov"] {
                let reply = try await console.get("/api/recordings/\(broken)/metadata")
                #expect(reply.status == 422, "\(broken)")
                #expect(String(decoding: reply.body, as: UTF8.self).contains("cannot be read"), "\(broken)")
                #expect(try await console.get("/api/recordings/\(broken)/snapshot?t=1").status == 422)
            }
            let list = try #require(try await console.get("/api/recordings").json as? [[String: Any]])
            #expect(list.count == 3)
            #expect(list.filter { $0["error"] != nil }.count == 2)
            #expect(try await console.get("/health").status == 200)
            #expect(try await console.get("/api/recordings/\(name)/metadata").status == 200)
        }
    }

    @Test func aSnapshotHasTheBoxesDrawnWhereTheFacesAre() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let frame = 150
            let time = recording.frameTimes[frame].seconds
            let reply = try await console.get("/api/recordings/\(name)/snapshot?t=\(time)")
            #expect(reply.status == 200 && reply.headers["content-type"] == "image/jpeg")
            let jpeg = directory.file("snapshot.jpg")
            try reply.body.write(to: URL(fileURLWithPath: jpeg))
            // Decoded by ffmpeg, not by us.
            let pixels = try IndependentReaders.rgbFrame(jpeg, at: 0, width: 640, height: 480)
            for face in SampleRecording.faces(onFrame: frame) {
                let b = face.bounds
                let (left, top) = (Int(b.x * 640), Int(b.y * 480))
                let (right, bottom) = (Int((b.x + b.width) * 640), Int((b.y + b.height) * 480))
                let middleX = (left + right) / 2
                #expect(pixels.isFaceGreen(middleX, top + 1), "face \(face.faceID) top edge")
                #expect(pixels.isFaceGreen(left + 1, (top + bottom) / 2), "face \(face.faceID) left edge")
                #expect(pixels.isFaceGreen(right - 2, (top + bottom) / 2), "face \(face.faceID) right edge")
                #expect(!pixels.isFaceGreen(middleX, (top + bottom) / 2), "face \(face.faceID) middle")
                #expect(!pixels.isFaceGreen(middleX, top - 8), "face \(face.faceID) above")
            }
            let small = try await console.get("/api/recordings/\(name)/snapshot?t=\(time)&width=160")
            try small.body.write(to: URL(fileURLWithPath: jpeg))
            let probe = try ExternalTool.run(
                "ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", jpeg])
            #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "160,120")
            #expect(try await console.get("/api/recordings/\(name)/snapshot").status == 400)
        }
    }

    @Test func aTokenGuardsEverythingButHealth() async throws {
        var configuration = configuration
        configuration.token = "0123456789abcdef0123"
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            #expect(try await console.get("/api/recordings").status == 401)
            #expect(try await console.get("/media/\(name)").status == 401)
            #expect(try await console.get("/api/recordings", headers: ["Authorization": "Bearer wrong"]).status == 401)
            let authorised = ["Authorization": "Bearer 0123456789abcdef0123"]
            #expect(try await console.get("/api/recordings", headers: authorised).status == 200)
            #expect(
                try await console.get("/api/recordings", headers: ["Cookie": "sightline_token=0123456789abcdef0123"])
                    .status == 200)
            #expect(try await console.get("/health").status == 200)
        }
    }

    @Test func listeningBeyondLoopbackNeedsATokenOrInsecure() throws {
        var configuration = configuration
        configuration.host = "0.0.0.0"
        #expect(throws: SightlineError.self) { try configuration.validate() }
        configuration.token = "short"
        #expect(throws: SightlineError.self) { try configuration.validate() }
        configuration.token = "0123456789abcdef0123"
        try configuration.validate()
        configuration.token = nil
        configuration.allowRemote = true
        try configuration.validate()
    }

    @Test func theGridsSourcesAreChecked() async throws {
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            for query in [
                "", "?sources=", "?sources=a,a", "?sources=a%2Fb",
                "?sources=" + String(repeating: "a,", count: 64) + "b",
            ] {
                #expect(try await console.get("/api/grid/video" + query).status == 400, "\(query)")
                #expect(try await console.get("/api/grid/stream" + query).status == 400, "\(query)")
            }
        }
    }

    @Test func liveFramesArriveWithTheirOwnFacesOverTheBus() async throws {
        let endpoint = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        let publisher = try Publisher(endpoint: endpoint, logger: Logger(label: "console-test"))
        var configuration = ConsoleConfiguration()
        configuration.endpoints = [endpoint]
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let frames = console.console.live.frames(of: "cam1")
            #expect(await publisher.waitForSubscription(to: "frames/", timeout: .seconds(30)))
            let now = WallClock.nowNanoseconds()
            publisher.publish(
                Message(
                    kind: .status, source: "cam1", time: nil, wallTimeNs: now,
                    status: SourceStatus(state: .started, detections: ["faces"])))
            let face = FaceObject(
                faceID: 7, bounds: NormalizedRect(x: 0.25, y: 0.5, width: 0.125, height: 0.25), rollAngle: nil,
                yawAngle: nil, time: MediaTime(value: 3, timescale: 30), duration: nil, score: 1, subDetector: 0)
            let info = FrameInfo(format: .jpeg, width: 320, height: 240, sourceWidth: 640, sourceHeight: 480)
            for n in 1...3 {
                let time = MediaTime(value: Int64(n), timescale: 30)
                publisher.publish(
                    Message(kind: .frames, source: "cam1", time: time, wallTimeNs: now, frame: info),
                    payload: [0xFF, 0xD8, UInt8(n)])
                var faceThen = face
                faceThen.time = time
                publisher.publish(
                    Message(kind: .faces, source: "cam1", time: time, wallTimeNs: now, faces: n == 2 ? [] : [faceThen]))
            }
            var received: [LiveFrame] = []
            for await frame in frames {
                received.append(frame)
                if received.count == 3 { break }
            }
            #expect(received.map(\.time) == [1, 2, 3].map { Double($0) / 30 })
            #expect(received.map { $0[.faces]?.objects.map(\.id) ?? [-1] } == [[7], [], [7]])
            #expect(received[0][.faces]?.objects.first?.bounds == [0.25, 0.5, 0.125, 0.25])
            #expect(received.map(\.jpeg) == ["/9gB", "/9gC", "/9gD"])
            let summary = try #require(console.console.live.summaries.first)
            #expect(summary.id == "cam1" && summary.state == .running && summary.detections == ["faces"])
        }
        await publisher.close()
    }
}
