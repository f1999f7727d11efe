import SightlineCore

extension MovieWriter.PassthroughTrackFormat {
    /// An AAC sound track (`soun`, `mp4a` with its `esds`), timed in samples: what iPhone
    /// movies and FFmpeg write, and what every player reads.
    package static func aac(_ format: AudioFormat) throws -> Self {
        guard format.codec == "aac", let config = format.configBytes, !config.isEmpty, config.count < 128 else {
            throw MovieError.invalidInput("audio of codec \(format.codec) with config '\(format.config)' is not AAC")
        }
        guard (1...8).contains(format.channels), (1...UInt32.max).contains(UInt32(clamping: format.sampleRate)) else {
            throw MovieError.invalidInput(
                "AAC of \(format.channels) channels at \(format.sampleRate) Hz is out of range")
        }
        let entry = boxBytes { w in
            w.box("mp4a") { w in
                w.zeros(6)
                w.u16(1)  // data reference index
                w.zeros(8)  // sound description version 0, revision, vendor
                w.u16(UInt16(format.channels))
                w.u16(16)  // sample size
                w.zeros(4)  // compression ID, packet size
                // 16.16; rates past 65535 Hz do not fit and are left to the esds.
                w.u32(format.sampleRate < 65536 ? UInt32(format.sampleRate) << 16 : 0)
                w.fullBox("esds", version: 0, flags: 0) { w in
                    descriptor(&w, tag: 0x03) { w in  // ES_Descriptor
                        w.u16(0)  // ES_ID
                        w.u8(0)  // no dependence, URL or OCR stream
                        descriptor(&w, tag: 0x04) { w in  // DecoderConfigDescriptor
                            w.u8(0x40)  // object type: Audio ISO/IEC 14496-3
                            w.u8(0x15)  // stream type audio (5), upstream 0, reserved 1
                            w.u24(0)  // buffer size
                            w.u32(0)  // max bit rate
                            w.u32(0)  // average bit rate
                            descriptor(&w, tag: 0x05) { $0.append(config) }  // DecoderSpecificInfo
                        }
                        descriptor(&w, tag: 0x06) { $0.u8(0x02) }  // SLConfigDescriptor: MP4
                    }
                }
            }
        }
        return Self(handler: "soun", timescale: UInt32(format.sampleRate), sampleEntry: entry)
    }

    /// An MPEG-4 descriptor: tag, length (one byte: ours are short), contents.
    private static func descriptor(_ w: inout ByteWriter, tag: UInt8, _ body: (inout ByteWriter) -> Void) {
        var contents = ByteWriter()
        body(&contents)
        w.u8(tag)
        w.u8(UInt8(contents.bytes.count))
        w.append(contents.bytes)
    }
}
