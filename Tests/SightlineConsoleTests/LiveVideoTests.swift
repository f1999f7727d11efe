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
        let sets = try #require(H264.parameterSets(avcC: sample.format.avcConfiguration))
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
}
