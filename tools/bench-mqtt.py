#!/usr/bin/env python3
"""What the MQTT output costs and how late its events are, against a mosquitto broker
started here on loopback:

- latency: the bundled sample looped as fast as it decodes, faces detected on every
  frame; each event's arrival at a ZeroMQ subscriber (pyzmq, here) and at mosquitto_sub
  (its own receipt time, `%U`), on the same clock: p50, p99 and the largest of the difference;
- cost: the same sample in real time (30 fps, faces in view), a run with `--mqtt` against
  one without, alternated `--pairs` times: the process's CPU seconds and their ratio;
- own: what the output itself costs, counted rather than compared (the ratio cannot resolve
  2% on a noisy machine): its threads' CPU time, plus the snapshots it had the source take
  times one JPEG encode's cost.

  python3 tools/bench-mqtt.py .build/release/sightline [--seconds 20] [--pairs 3]
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sightline_testkit import free_port, wait_for  # noqa: E402


def broker(work):
    port = free_port()
    config = os.path.join(work, "mosquitto.conf")
    with open(config, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    process = subprocess.Popen(["mosquitto", "-c", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import socket

    def listening():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    wait_for(listening, what="mosquitto")
    return process, port


def latency(binary, port, seconds):
    publish = free_port()
    zmq_socket = zmq.Context.instance().socket(zmq.SUB)
    zmq_socket.setsockopt(zmq.SUBSCRIBE, b"events/")
    zmq_socket.connect(f"tcp://127.0.0.1:{publish}")
    sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "bench/events", "-q", "1",
                            "-F", "%U\t%p"], stdout=subprocess.PIPE, text=True)
    mqtt_arrivals = {}

    def read():
        for line in sub.stdout:
            stamp, payload = line.rstrip("\n").split("\t", 1)
            event = json.loads(payload)
            mqtt_arrivals[(event["after"]["object_id"], event["type"])] = float(stamp)
    threading.Thread(target=read, daemon=True).start()
    time.sleep(0.5)
    run = subprocess.Popen([binary, "run", "--loop", "--every-frame", "--publish", f"tcp://127.0.0.1:{publish}",
                            "--wait-for-subscriber", "30", "--mqtt", f"mqtt://127.0.0.1:{port}", "--mqtt-prefix",
                            "bench", "--log-level", "error"])
    zmq_arrivals = {}
    kinds = {"enter": "new", "leave": "end", "identified": "update"}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if zmq_socket.poll(100):
            _, body = zmq_socket.recv_multipart()[:2]
            arrived = time.time()
            event = json.loads(body)["event"]
            zmq_arrivals[(event["id"], kinds[event["change"]])] = arrived
    run.send_signal(signal.SIGINT)
    run.wait(timeout=60)
    time.sleep(1)
    sub.terminate()
    zmq_socket.close(linger=0)
    # A restarted loop gives IDs again: only events whose key appeared once on each side.
    deltas = sorted((mqtt_arrivals[k] - t) * 1000 for k, t in zmq_arrivals.items() if k in mqtt_arrivals)
    return deltas, len(zmq_arrivals)


def cpu(binary, port, seconds, mqtt):
    """The whole run's CPU seconds, and (with `mqtt`) those of the output's own threads (`mqtt`,
    and libmosquitto's `mosquitto loop`) and the snapshots it had made, read just before the run
    stops."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    metrics = free_port()
    args = [binary, "run", "--realtime", "--loop", "--publish", f"tcp://127.0.0.1:{free_port()}", "--log-level",
            "error", "--metrics", f"127.0.0.1:{metrics}"]
    if mqtt:
        args += ["--mqtt", f"mqtt://127.0.0.1:{port}", "--mqtt-prefix", "cost"]
    run = subprocess.Popen(args)
    time.sleep(seconds)
    threads, snapshots = output_threads_cpu(run.pid), snapshots_published(metrics)
    run.send_signal(signal.SIGINT)
    run.wait(timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), threads, snapshots


def output_threads_cpu(pid):
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            if name in ("mqtt", "mosquitto loop"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue
    return total


def snapshots_published(port):
    from sightline_testkit import http
    _, _, body = http(f"http://127.0.0.1:{port}/metrics")
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
               if line.startswith("sightline_snapshots_published_total"))


def jpeg_encode_seconds():
    """What one snapshot's encode costs: libavcodec's MJPEG encoder (the source's) on 1280x720
    frames at the same quality, through ffmpeg, per frame: the run with it less the same run
    writing the frames raw (making the test pattern). The snapshot's same-size copy to full
    range and its box are not in it."""
    def seconds(codec):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=1280x720:r=30:d=10", "-pix_fmt",
                        "yuvj420p", "-c:v", *codec, "-f", "null", "-"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (seconds(["mjpeg", "-q:v", "5"]) - seconds(["rawvideo"])) / 300


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="sightline-bench-mqtt-")
    process, port = broker(work)
    try:
        deltas, events = latency(args.binary, port, args.seconds)
        if deltas:
            p = lambda q: deltas[min(len(deltas) - 1, int(q * len(deltas)))]
            print(f"latency  MQTT after ZeroMQ: p50 {p(0.5):.2f} ms, p99 {p(0.99):.2f} ms, max {deltas[-1]:.2f} ms "
                  f"({len(deltas)} of {events} events)")
        without, with_mqtt, own, snapshots = [], [], [], []
        for _ in range(args.pairs):
            without.append(cpu(args.binary, port, args.seconds, False)[0])
            total, threads, taken = cpu(args.binary, port, args.seconds, True)
            with_mqtt.append(total)
            own.append(threads)
            snapshots.append(taken)
        ratios = sorted(w / b for w, b in zip(with_mqtt, without))
        print(f"cost     {args.seconds:.0f} s at 30 fps: {sum(without) / len(without):.2f} s CPU without, "
              f"{sum(with_mqtt) / len(with_mqtt):.2f} s with --mqtt: {ratios[len(ratios) // 2]:.3f}x "
              f"(pairs {', '.join(f'{r:.3f}' for r in ratios)})")
        # The ratio cannot resolve 2% on a noisy machine; the output's own threads and its
        # snapshots' encodes can be counted directly.
        base = sum(without) / len(without)
        encode = jpeg_encode_seconds()
        taken = sum(snapshots) / len(snapshots)
        print(f"own      the output's threads {sum(own) / len(own):.3f} s CPU, {taken:.0f} snapshots x "
              f"{encode * 1000:.1f} ms: {(sum(own) / len(own) + taken * encode) / base:.2%} of the run without it")
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()
