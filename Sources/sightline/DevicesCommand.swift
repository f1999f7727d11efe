import ArgumentParser
import Foundation
import SightlineCapture

struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the V4L2 cameras: driver, card, bus, and each format's sizes and frame rates.",
        discussion: """
            Examples:
              sightline devices
              sightline devices --json | jq '.[0].formats[].pixelFormat'
            """)

    @Flag(help: "Print JSON for scripts.")
    var json = false

    func run() throws {
        let devices = V4L2Device.list()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(devices), as: UTF8.self))
            return
        }
        if devices.isEmpty { print("no V4L2 capture device found (/dev/video*)") }
        for device in devices {
            print("\(device.path): \(device.card) (driver \(device.driver), bus \(device.bus))")
            for format in device.formats {
                let readable = format.pixelFormat.isSupported ? "" : "  [not supported by sightline]"
                print("  \(format.pixelFormat) (\(format.description))\(readable)")
                if let range = format.sizeRange { print("    sizes \(range)") }
                for size in format.sizes {
                    let rates = size.frameRates.map {
                        $0 == $0.rounded() ? String(Int($0)) : String(format: "%.2f", $0)
                    }
                    print("    \(size.width)x\(size.height)  \(rates.joined(separator: ", ")) fps")
                }
            }
        }
    }
}
