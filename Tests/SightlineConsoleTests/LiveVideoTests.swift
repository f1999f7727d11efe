import Foundation
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineConsole

/// The grid's stream of one source, fed the sample's H.264 as the bus carries it (Annex B,
/// parameter sets in-band on key frames): what a viewer who joins gets, and when viewers
/// must start again.
@Suite struct LiveVideoTests {
    let messages: [(Message, [UInt8])]

    init() throws {
        let sample = try SampleRecording()
        let sets = try #require(H264.parameterSets(avcC: sample.format.configuration))
        messages = try sample.packets.map { packet in
            let units = try #require(H264.nalUnits(lengthPrefixed: packet.data, lengthSize: sets.lengthSize))
            let payload = H264.annexB((packet.isKeyFrame ? sets.units : []) + units)
            let info = VideoPacketInfo(
                keyFrame: packet.isKeyFrame, decodeTime: packet.decodeTime, duration: nil, width: sample.format.width,
                height: sample.format.height)
            return (
                Message(kind: .video, source: "cam1", time: packet.presentationTime, wallTimeNs: 1, video: info),
                payload
            )
        }
    }

    @Test func aViewerWhoJoinsGetsTheFragmentsSinceTheLastKeyFrame() throws {
        var video = LiveVideo()
        var keyFrames = 0
        // The first group of pictures decodes before time zero: not shown.
        let shown = try #require(messages.indices.first { $0 > 0 && messages[$0].0.video!.keyFrame })
        for (message, payload) in messages[..<shown] { #expect(video.add(message, payload: payload).fragment == nil) }
        for (index, (message, payload)) in messages.enumerated() where index >= shown {
            let added = video.add(message, payload: payload)
            #expect(!added.restarted && added.fragment != nil, "message \(index)")
            if message.video!.keyFrame { keyFrames += 1 }
            let sinceKey = index - messages[...index].lastIndex { $0.0.video!.keyFrame }! + 1
            #expect(video.sinceKeyFrame.count == sinceKey)
            #expect(video.sinceKeyFrame.last == added.fragment)
        }
        #expect(keyFrames > 1)
        #expect(video.movie?.codec.hasPrefix("avc1.") == true)
    }

    @Test func aSourceThatStartsAgainStartsANewStream() throws {
        var video = LiveVideo()
        let keyFrames = messages.indices.filter { messages[$0].0.video!.keyFrame }
        try #require(keyFrames.count >= 3)
        // Before its first key frame, nothing can be played.
        let delta = keyFrames[1] + 1
        #expect(video.add(messages[delta].0, payload: messages[delta].1).fragment == nil)
        for (message, payload) in messages[keyFrames[2]...] { _ = video.add(message, payload: payload) }
        // Time goes back at a key frame (the status that said so was lost): a new stream.
        let again = video.add(messages[keyFrames[1]].0, payload: messages[keyFrames[1]].1)
        #expect(again.restarted && again.fragment != nil && video.sinceKeyFrame.count == 1)
        // A `started` status: the stream before ends at the next key frame.
        video.reset()
        #expect(video.movie == nil && video.sinceKeyFrame.isEmpty)
        #expect(video.add(messages[keyFrames[1]].0, payload: messages[keyFrames[1]].1).restarted)
        // Not H.264, or no payload: ignored.
        var other = messages[1].0
        other.video?.codec = "hevc"
        #expect(video.add(other, payload: messages[1].1).fragment == nil)
        #expect(video.add(messages[1].0, payload: []).fragment == nil)
    }

    /// Hostile `video` messages (anything the bus's limits let through: garbage bytes, cut
    /// and spliced access units, times that jump, sizes that change) never stop the console:
    /// every one is muxed or refused, and every fragment written is a whole `moof`/`mdat`.
    @Test func hostileVideoMessagesAreMuxedOrRefused() throws {
        var random = SplitMix(seed: UInt64(ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_SEED"] ?? "") ?? 42)
        var video = LiveVideo()
        var fragments = 0
        for round in 0..<4000 {
            var (message, payload) = messages[random.next(below: messages.count)]
            switch random.next(below: 6) {
            case 0: payload = (0..<random.next(below: 200)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            case 1: payload = Array(payload.prefix(random.next(below: payload.count + 1)))
            case 2:
                for _ in 0..<8 where !payload.isEmpty {
                    payload[random.next(below: payload.count)] = UInt8(truncatingIfNeeded: random.next())
                }
            case 3:
                let seconds = Double(Int64(truncatingIfNeeded: random.next()) % (1 << 32))
                let scale = Int32(1 + random.next(below: 1_000_000))
                message.time = MediaTime(seconds: seconds, timescale: scale)
                message.video?.decodeTime = MediaTime(
                    seconds: seconds - Double(random.next(below: 3)), timescale: scale)
            case 4:
                message.video?.width = random.next(below: 20_000)
                message.video?.height = random.next(below: 20_000)
                message.video?.keyFrame.toggle()
            default: break
            }
            let added = video.add(message, payload: payload)
            guard let fragment = added.fragment else { continue }
            fragments += 1
            // moof then mdat, their sizes adding up to the fragment's.
            let moof = Int(fragment[0]) << 24 | Int(fragment[1]) << 16 | Int(fragment[2]) << 8 | Int(fragment[3])
            #expect(Array(fragment[4..<8]) == Array("moof".utf8), "round \(round)")
            #expect(moof + 8 <= fragment.count && Array(fragment[(moof + 4)..<(moof + 8)]) == Array("mdat".utf8))
        }
        #expect(fragments > 20)
    }

    @Test func theGridFramesEachSourcesBytes() {
        #expect(LiveGrid.framed("cam7", [9, 8, 7]) == [0, 0, 0, 8, 4] + Array("cam7".utf8) + [9, 8, 7])
        #expect(LiveGrid.framed("a", []) == [0, 0, 0, 2, 1, 0x61])
    }
}
