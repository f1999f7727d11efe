import SightlineCore

/// Frames held in memory, handed over in order as fast as they are taken, then the end: a
/// pipeline's source without a file or device, for tests and for frames another part of a
/// program already has (as HummingbirdTesting runs an application without a socket).
package final class MemoryFrameSource: FrameSource {
    package let input: InputDescription
    /// Taken by the capture thread only.
    private var frames: ArraySlice<VideoFrame>
    private let interrupt = InterruptFlag()

    package init(frames: [VideoFrame], input: InputDescription) {
        self.frames = frames[...]
        self.input = input
    }

    package func read() throws -> SourceRead {
        guard !interrupt.isSet, let frame = frames.popFirst() else { return .end }
        return .frame(frame)
    }

    package func cancel() { interrupt.set() }
}
