import SightlineCapture
import SightlineCore

/// Where a pipeline's frames come from, each kind with the options only it takes, so that
/// a camera's mode cannot be given to a file nor a file's pacing to a camera.
package enum PipelineSource: Sendable {
    /// A V4L2 device (`/dev/video0`): its mode and reconnection, and a microphone (an ALSA
    /// capture device, `hw:1,0`) recorded as its sound.
    case camera(path: String, options: V4L2Source.Options = .init(), microphone: String? = nil)
    /// A file, or a stream FFmpeg opens (`rtsp://`, `http://`): pacing, looping, audio.
    case media(url: String, options: MediaFileSource.Options = .init())
    /// Frames already in memory, described by `input` (its `url` names them), analysed
    /// every one, as fast as the detectors take them.
    case frames([VideoFrame], input: InputDescription)

    /// What a user names a source by: a device node is a camera, anything else media.
    package static func named(_ name: String) -> PipelineSource {
        V4L2Source.isDevice(name) ? .camera(path: name) : .media(url: name)
    }

    /// The device path or URL, as the user gave it.
    package var name: String {
        switch self {
        case .camera(let path, _, _): path
        case .media(let url, _): url
        case .frames(_, let input): input.url
        }
    }

    /// The camera's device path; nil for media.
    package var devicePath: String? {
        if case .camera(let path, _, _) = self { return path }
        return nil
    }
}
