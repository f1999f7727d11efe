/// One H.264 or H.265 access unit (a coded picture) and its timing, the one type every stage hands
/// on: the encoder and the demuxer make it, the bus carries it (a `VideoPacketInfo` header
/// and its Annex B bytes), the recorder and burn-in give it to the movie writer. Its NAL
/// units are found once, when it is made from Annex B; its parameter sets and the sample a
/// movie stores are read from them.
package struct VideoAccessUnit: Sendable {
    package var codec: VideoCodec
    package var presentationTime: MediaTime
    package var decodeTime: MediaTime
    /// Needed only for a track's last sample; others last until the next one's decode time.
    package var duration: MediaTime?
    package var isKeyFrame: Bool
    private let bytes: Bytes

    private enum Bytes: Sendable {
        /// Start-code delimited, as the encoder, the demuxer and the bus have it (a key frame
        /// carries its SPS and PPS in-band), with the NAL units found in it.
        case annexB([UInt8], units: [ArraySlice<UInt8>])
        /// As a movie stores it: length-prefixed, parameter sets in the track's `avcC` or `hvcC`.
        case stored([UInt8])
    }

    /// From Annex B bytes, which it splits into NAL units.
    package init(
        annexB: [UInt8], codec: VideoCodec = .h264, presentationTime: MediaTime, decodeTime: MediaTime,
        duration: MediaTime?, isKeyFrame: Bool
    ) {
        bytes = .annexB(annexB, units: H264.nalUnits(annexB: annexB))
        self.codec = codec
        (self.presentationTime, self.decodeTime, self.duration, self.isKeyFrame) = (
            presentationTime, decodeTime, duration, isKeyFrame
        )
    }

    /// From NAL units already found (a demuxed packet's), in Annex B.
    package init(
        nalUnits: [ArraySlice<UInt8>], codec: VideoCodec = .h264, presentationTime: MediaTime,
        decodeTime: MediaTime, duration: MediaTime?, isKeyFrame: Bool
    ) {
        bytes = .annexB(H264.annexB(nalUnits), units: nalUnits)
        self.codec = codec
        (self.presentationTime, self.decodeTime, self.duration, self.isKeyFrame) = (
            presentationTime, decodeTime, duration, isKeyFrame
        )
    }

    /// A sample as a movie stores it, to be written again as it is (a trimmed copy).
    package init(
        storedSample: [UInt8], codec: VideoCodec = .h264, decodeTime: MediaTime, presentationTime: MediaTime,
        duration: MediaTime? = nil, isKeyFrame: Bool
    ) {
        bytes = .stored(storedSample)
        self.codec = codec
        (self.presentationTime, self.decodeTime, self.duration, self.isKeyFrame) = (
            presentationTime, decodeTime, duration, isKeyFrame
        )
    }

    /// From a `video` message: its header, its presentation time and its payload; nil for
    /// a codec Sightline does not carry.
    package init?(_ info: VideoPacketInfo, time: MediaTime, payload: [UInt8]) {
        guard let codec = VideoCodec(name: info.codec) else { return nil }
        self.init(
            annexB: payload, codec: codec, presentationTime: time, decodeTime: info.decodeTime, duration: info.duration,
            isKeyFrame: info.keyFrame)
    }

    /// The header of the `video` message that carries it.
    package func info(width: Int, height: Int) -> VideoPacketInfo {
        VideoPacketInfo(
            codec: codec.rawValue, keyFrame: isKeyFrame, decodeTime: decodeTime, duration: duration, width: width,
            height: height)
    }

    /// Its NAL units; a stored sample's are not looked for (nothing reads them).
    package var nalUnits: [ArraySlice<UInt8>] {
        if case .annexB(_, let units) = bytes { return units }
        return []
    }

    /// Annex B bytes, what the bus carries; empty for a stored sample.
    package var annexB: [UInt8] {
        if case .annexB(let bytes, _) = bytes { return bytes }
        return []
    }

    /// Its parameter sets (SPS and PPS, and VPS in H.265), which a key frame carries in-band.
    package var parameterSets: [ArraySlice<UInt8>] { nalUnits.filter(codec.isParameterSet) }

    /// As a movie stores it: 4-byte length prefixes, without the parameter sets (the track's
    /// configuration record has them) and delimiters.
    package var sampleData: [UInt8] {
        switch bytes {
        case .stored(let data): data
        case .annexB(_, let units): H264.lengthPrefixed(units.filter(codec.belongsInSample))
        }
    }
}
