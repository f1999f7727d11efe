import ArgumentParser
import Foundation
import SightlineCapture

struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract:
            "List the V4L2 cameras (driver, card, bus, each format's sizes and frame rates) and the ALSA microphones.",
        discussion: """
            A microphone's name is what --audio-device takes.

            Examples:
              sightline devices
              sightline devices --json | jq '.cameras[0].formats[].pixelFormat'
              sightline devices --json | jq -r '.microphones[].name'
            """)

    @Flag(help: "Print JSON for scripts.")
    var json = false

    struct Listing: Encodable {
        var cameras: [V4L2Device]
        var microphones: [AudioCaptureDevice]
    }

    func run() throws {
        let devices = V4L2Device.list()
        let microphones = Microphone.captureDevices()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(
                String(
                    decoding: try encoder.encode(Listing(cameras: devices, microphones: microphones)), as: UTF8.self))
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
        if microphones.isEmpty { print("no ALSA capture device found") }
        for microphone in microphones {
            print(
                "\(microphone.name): \(microphone.card): \(microphone.description) (microphone, --audio-device \(microphone.name))"
            )
        }
    }
}
