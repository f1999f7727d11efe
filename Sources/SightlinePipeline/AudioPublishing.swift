import SightlineBus
import SightlineCore

/// Publishes the source's audio, one `audio` message per AAC frame, while someone
/// subscribes to `audio/<source>/` (a recorder): no cost otherwise.
///
/// `publish` runs on the thread that makes the audio: the capture thread, or a microphone's.
package final class AudioPublishing: Sendable {
    private let publisher: Publisher
    private let sourceID: String
    private let format: AudioFormat
    private let demand: OnDemandTopic

    package init(publisher: Publisher, sourceID: String, format: AudioFormat) {
        self.publisher = publisher
        self.sourceID = sourceID
        self.format = format
        demand = OnDemandTopic(publisher: publisher, kind: .audio, sourceID: sourceID, mode: .onDemand)
    }

    package func publish(_ packet: EncodedAudioPacket) {
        guard demand.wanted().publish else { return }
        publisher.publish(
            Message(
                kind: .audio, source: sourceID, time: packet.time, wallTimeNs: WallClock.nowNanoseconds(),
                audio: AudioPacketInfo(format: format, duration: packet.duration)),
            payload: packet.data)
    }
}
