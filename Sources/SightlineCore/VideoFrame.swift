/// A frame as a source delivers it: the image, when it belongs on the media timeline,
/// and when it was captured by the wall clock (for end-to-end latency).
package struct VideoFrame: Sendable {
    package let pixels: PixelBuffer
    /// Presentation time on the source's timeline.
    package let time: MediaTime
    /// How long the frame is shown, when the source knows it.
    package let duration: MediaTime?
    /// Wall-clock capture (or, for files, delivery) time in nanoseconds since 1970.
    package let wallClockNanoseconds: UInt64
    /// 0-based position in the order the source produced frames (not counting drops).
    package let index: Int

    package init(pixels: PixelBuffer, time: MediaTime, duration: MediaTime?, wallClockNanoseconds: UInt64, index: Int) {
        self.pixels = pixels
        self.time = time
        self.duration = duration
        self.wallClockNanoseconds = wallClockNanoseconds
        self.index = index
    }

    /// The frame, shown for at least `least`: a frame analysed at a rate stands for those
    /// left out after it, so its objects hold until the next analysed frame.
    package func lasting(atLeast least: MediaTime) -> VideoFrame {
        guard (duration ?? .zero) < least else { return self }
        return VideoFrame(
            pixels: pixels, time: time, duration: least, wallClockNanoseconds: wallClockNanoseconds, index: index)
    }
}
