import SightlineCapture
import SightlineCore
import SightlineHTTP
import SightlinePipeline

/// The sources a process runs, as `SourceRoutes` offers them over HTTP: their cameras'
/// controls and their latest pictures, found through the runners.
package struct MonitoredSources: RunningSources {
    let sources: [MonitoredSource]

    package init(_ sources: [MonitoredSource]) { self.sources = sources }

    package func cameraControls(ofSource id: String) throws -> CameraControls {
        let pipeline = try running(id)
        guard let controls = pipeline.cameraControls else {
            throw HTTPRefusal(.conflict, "source '\(id)' is not a camera: a file or stream has no controls")
        }
        return controls
    }

    package func latestPicture(ofSource id: String, boxes: Bool, height: Int?) throws -> [UInt8] {
        guard let stills = try running(id).stills else {
            throw HTTPRefusal(.conflict, "source '\(id)' is a file read whole: it has no latest picture")
        }
        guard let jpeg = try stills.jpeg(boxes: boxes, height: height) else {
            throw HTTPRefusal(.serviceUnavailable, "source '\(id)' has no frame yet")
        }
        return jpeg
    }

    /// The pipeline running source `id` now, or why there is none.
    private func running(_ id: String) throws -> AnalysisPipeline {
        guard let source = sources.first(where: { $0.id == id }) else {
            throw HTTPRefusal(.notFound, "no source '\(id.prefix(64))'")
        }
        guard let pipeline = source.runner?.pipeline else {
            throw HTTPRefusal(.serviceUnavailable, "source '\(id)' is not running now")
        }
        return pipeline
    }
}
