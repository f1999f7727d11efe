import Foundation
import SightlineTesting
import Testing

@testable import SightlineConsole

/// Clips made from the console: a trim of the sample recording, made on the server while its
/// progress is asked for, then downloaded under its camera, time and people, and read back by
/// ffprobe; every bad request refused with its reason.
@Suite struct ClipDownloadTests {
    let directory: TemporaryDirectory
    let name = "cam1-20261124T101500Z.mov"

    init() throws {
        directory = try TemporaryDirectory("clips")
        try SampleRecording().write(to: directory.file(name))
    }

    @Test func aClipIsMadeThenDownloadedUnderItsName() async throws {
        var configuration = ConsoleConfiguration()
        configuration.recordingDirectories = [directory.path]
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            let made = try await console.post("/api/recordings/\(name)/clips?from=4&to=6.5")
            #expect(made.status == 202)
            var status = try #require(made.json as? [String: Any])
            let id = try #require(status["id"] as? String)
            while status["state"] as? String == "making" {
                try await Task.sleep(for: .milliseconds(20))
                status = try #require(try await console.get("/api/clips/\(id)").json as? [String: Any])
            }
            #expect(status["state"] as? String == "done" && status["fraction"] as? Double == 1)
            // 10:15:04 is when the clip starts; Ada Lovelace is named in it.
            #expect(status["name"] as? String == "cam1-20261124T101504Z-Ada_Lovelace.mov")
            let file = try await console.get("/api/clips/\(id)/file")
            #expect(file.status == 200, "\(String(decoding: file.body, as: UTF8.self))")
            #expect(
                file.headers["content-disposition"] == "attachment; filename=\"cam1-20261124T101504Z-Ada_Lovelace.mov\""
            )
            #expect(UInt64(file.body.count) == status["bytes"] as? UInt64)
            let path = directory.file("clip.mov")
            try file.body.write(to: URL(fileURLWithPath: path))
            let streams = try IndependentReaders.streams(path)
            #expect(streams.first?.type == "video" && streams.contains { $0.tag == "mebx" })
            #expect(try IndependentReaders.decodedFrames(path) >= 75)
        }
    }

    @Test func badClipRequestsAreRefused() async throws {
        var configuration = ConsoleConfiguration()
        configuration.recordingDirectories = [directory.path]
        try await RunningConsole.with(configuration) { (console: RunningConsole) async throws in
            for (query, status) in [
                ("from=1", 400), ("from=5&to=4", 400), ("from=nan&to=4", 400), ("from=0&to=1e300", 400),
                ("from=0&to=1&mode=gif", 400), ("from=0&to=3601", 400),
            ] {
                let reply = try await console.post("/api/recordings/\(name)/clips?\(query)")
                #expect(reply.status == status, "\(query): \(String(decoding: reply.body, as: UTF8.self))")
            }
            #expect(try await console.post("/api/recordings/none.mov/clips?from=0&to=1").status == 404)
            #expect(try await console.post("/api/recordings/..%2Fx.mov/clips?from=0&to=1").status == 400)
            #expect(try await console.get("/api/clips/nothing").status == 404)
            #expect(try await console.get("/api/clips/nothing/file").status == 404)
        }
    }
}
