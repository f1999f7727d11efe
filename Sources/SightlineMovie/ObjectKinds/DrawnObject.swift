import SightlineCore

/// An object as it is drawn over a frame, live or recorded: its ID and normalised bounds,
/// and what a kind adds (a code's type, text and corners, the name of a face a gallery
/// named). Its JSON is what the console's pages read (docs/console.md).
package struct DrawnObject: Sendable, Encodable, Equatable {
    package var id: Int
    /// x, y, width, height, normalised to the frame.
    package var bounds: [Double]
    package var type: String?
    package var text: String?
    /// A code's four corners, x y pairs.
    package var corners: [Double]?
    /// Whose face, when a gallery named it.
    package var name: String?

    /// An object with an ID and bounds; a kind sets what it adds.
    package init(id: Int, bounds: [Double]) {
        self.id = id
        self.bounds = bounds
    }

    package init(id: Int, bounds: NormalizedRect) {
        self.init(id: id, bounds: [bounds.x, bounds.y, bounds.width, bounds.height])
    }

    package var rect: NormalizedRect { NormalizedRect(x: bounds[0], y: bounds[1], width: bounds[2], height: bounds[3]) }
}
