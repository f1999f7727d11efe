/// One H.264 access unit (a coded picture) and its timing, the one type every stage hands
/// on: the encoder and the demuxer make it, the bus carries it (a `VideoPacketInfo` header
/// and its Annex B bytes), the recorder and burn-in give it to the movie writer. Its NAL
/// units are found once, when it is made from Annex B; its parameter sets and the sample a
/// movie stores are read from them.
package struct VideoAccessUnit: Sendable {
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
        /// As a movie stores it: length-prefixed, parameter sets in the track's `avcC`.
        case stored([UInt8])
    }

    /// From Annex B bytes, which it splits into NAL units.
    package init(
        annexB: [UInt8], presentationTime: MediaTime, decodeTime: MediaTime, duration: MediaTime?, isKeyFrame: Bool
    ) {
        bytes = .annexB(annexB, units: H264.nalUnits(annexB: annexB))
        (self.presentationTime, self.decodeTime, self.duration, self.isKeyFrame) = (
            presentationTime, decodeTime, duration, isKeyFrame
        )
    }

    /// From NAL units already found (a demuxed packet's), in Annex B.
    package init(
        nalUnits: [ArraySlice<UInt8>], presentationTime: MediaTime, decodeTime: MediaTime, duration: MediaTime?,
        isKeyFrame: Bool
    ) {
        bytes = .annexB(H264.annexB(nalUnits), units: nalUnits)
        (self.presentationTime, self.decodeTime, self.duration, self.isKeyFrame) = (
            presentationTime, decodeTime, duration, isKeyFrame
        )
    }

    /// A sample as a movie stores it, to be written again as it is (a trimmed copy).
    package init(
        storedSample: [UInt8], decodeTime: MediaTime, presentationTime: MediaTime, duration: MediaTime? = nil,
        isKeyFrame: Bool
    ) {
        bytes = .stored(storedSample)
        (self.presentationTime, self.decodeTime, self.duration, self.isKeyFrame) = (
            presentationTime, decodeTime, duration, isKeyFrame
        )
    }

    /// From a `video` message: its header, its presentation time and its payload.
    package init(_ info: VideoPacketInfo, time: MediaTime, payload: [UInt8]) {
        self.init(
            annexB: payload, presentationTime: time, decodeTime: info.decodeTime, duration: info.duration,
            isKeyFrame: info.keyFrame)
    }

    /// The header of the `video` message that carries it.
    package func info(width: Int, height: Int) -> VideoPacketInfo {
        VideoPacketInfo(keyFrame: isKeyFrame, decodeTime: decodeTime, duration: duration, width: width, height: height)
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

    /// Its SPS and PPS, which a key frame carries in-band.
    package var parameterSets: [ArraySlice<UInt8>] {
        nalUnits.filter { [H264.sequenceParameterSet, H264.pictureParameterSet].contains(H264.type(of: $0)) }
    }

    /// As a movie stores it: 4-byte length prefixes, without the parameter sets (the track's
    /// `avcC` has them) and delimiters.
    package var sampleData: [UInt8] {
        switch bytes {
        case .stored(let data): data
        case .annexB(_, let units):
            H264.lengthPrefixed(
                units.filter {
                    ![H264.sequenceParameterSet, H264.pictureParameterSet, H264.accessUnitDelimiter].contains(
                        H264.type(of: $0))
                })
        }
    }
}
