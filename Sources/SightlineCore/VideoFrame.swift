/// A frame as a source delivers it: the image, when it belongs on the media timeline,
/// and when it was captured by the wall clock (for end-to-end latency).
public struct VideoFrame: Sendable {
    public let pixels: PixelBuffer
    /// Presentation time on the source's timeline.
    public let time: MediaTime
    /// How long the frame is shown, when the source knows it.
    public let duration: MediaTime?
    /// Wall-clock capture (or, for files, delivery) time in nanoseconds since 1970.
    public let wallClockNanoseconds: UInt64
    /// 0-based position in the order the source produced frames (not counting drops).
    public let index: Int

    public init(pixels: PixelBuffer, time: MediaTime, duration: MediaTime?, wallClockNanoseconds: UInt64, index: Int) {
        self.pixels = pixels
        self.time = time
        self.duration = duration
        self.wallClockNanoseconds = wallClockNanoseconds
        self.index = index
    }
}
