// The camera grid: each source's own H.264 played through Media Source Extensions, with the
// boxes of the frame the browser presents (docs/console.md, "The grid").
"use strict";

// RFC 6381's codec of the stream, from the avcC or hvcC record in its initialization
// segment (as VideoTrackFormat.codecString makes it).
function streamCodec(bytes) {
  for (let i = 4; i + 17 <= bytes.length; i++) {
    if (bytes[i + 1] !== 0x76 || bytes[i + 2] !== 0x63 || bytes[i + 3] !== 0x43) continue;  // "?vcC"
    const record = bytes.subarray(i + 4);
    if (bytes[i] === 0x61) return "avc1." + [1, 2, 3].map((k) => record[k].toString(16).padStart(2, "0")).join("");
    if (bytes[i] !== 0x68) continue;
    let compatibility = 0;  // bit-reversed
    for (let bit = 0; bit < 32; bit++) compatibility |= ((record[2 + (bit >> 3)] >> (7 - (bit & 7))) & 1) << bit;
    const constraints = Array.from(record.subarray(6, 12));
    while (constraints.length && !constraints[constraints.length - 1]) constraints.pop();
    return ["hvc1", ["", "A", "B", "C"][record[1] >> 6] + (record[1] & 0x1f), (compatibility >>> 0).toString(16),
      (record[1] & 0x20 ? "H" : "L") + record[12], ...constraints.map((c) => c.toString(16).toUpperCase())].join(".");
  }
  return null;
}

function joined(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) { out.set(chunk, at); at += chunk.length; }
  return out;
}

class LiveTile {
  constructor(source, element) {
    this.source = source;
    this.element = element;
    this.video = element.querySelector("video");
    this.image = element.querySelector("img");
    this.overlay = element.querySelector("svg");
    this.info = element.querySelector(".info");
    // Each detector's messages, newest last ({time, objects, arrived}), by kind and detector.
    this.groups = new Map();
    // Capture time (ns since 1970) of each video frame, by media time.
    this.clock = new Map();
    this.clockArrived = new Map();
    this.lags = [];        // ms from a frame's arrival to its objects' arrival
    this.delays = [];      // capture-to-paint, ms, newest last (read by the tests)
    this.playing = false;
    this.restart();
    // One callback chain for the tile's life: each presented frame asks for the next.
    this.video.requestVideoFrameCallback((now, frame) => this.presented(now, frame));
  }

  key(message) { return `${message.kind}/${message.detector || ""}`; }

  // One detector's message, or a video frame's times (kind "video").
  objects(message) {
    const at = message.time.toFixed(6);
    if (message.kind === "video") {
      this.clock.set(at, message.wallTimeNs);
      this.clockArrived.set(at, performance.now());
      if (this.clock.size > 900) {
        const oldest = this.clock.keys().next().value;
        this.clock.delete(oldest);
        this.clockArrived.delete(oldest);
      }
      return;
    }
    const arrivedFrame = this.clockArrived.get(at);
    if (arrivedFrame !== undefined) {
      this.lags.push(performance.now() - arrivedFrame);
      if (this.lags.length > 32) this.lags.shift();
    }
    const list = this.groups.get(this.key(message)) || [];
    // A source that started again counts from its start.
    if (list.length && message.time < list[list.length - 1].time) list.length = 0;
    list.push({ time: message.time, kind: message.kind, objects: message.objects });
    while (list.length > 600) list.shift();
    this.groups.set(this.key(message), list);
  }

  // Until the video plays: the JPEG frames a source publishes with --frames jpeg.
  frame(frame) {
    if (this.playing) return;
    this.image.src = "data:image/jpeg;base64," + frame.jpeg;
    this.image.hidden = false;
    this.video.hidden = true;
    const groups = sightline.kinds.filter((kind) => frame[kind.name]).map((kind) =>
      ({ kind, objects: frame[kind.name].objects, held: frame[kind.name].held }));
    sightline.drawObjects(this.overlay, frame.width, frame.height, groups);
    this.element.dataset.mode = "jpeg";
    this.info.textContent = `${this.unplayable ? this.unplayable + " · " : ""}JPEG frames · t = ${frame.time.toFixed(3)} s`;
  }

  // A new stream: a new MediaSource, fed from its initialization segment on.
  restart() {
    this.unplayable = null;
    this.head = [];
    this.queue = [];
    this.buffer = null;
    this.media = new MediaSource();
    this.video.src = URL.createObjectURL(this.media);
  }

  // Bytes of the source's stream; empty when the stream ended (a new one follows).
  videoBytes(bytes) {
    if (!bytes.length) return this.restart();
    if (this.unplayable) return;
    if (!this.buffer) {
      this.head.push(bytes);
      const codec = streamCodec(joined(this.head));
      if (!codec || this.media.readyState !== "open") return;
      const type = `video/mp4; codecs="${codec}"`;
      if (!MediaSource.isTypeSupported(type)) {
        // Most browsers do not play H.265: the tile shows the source's JPEG frames instead
        // (`frames: jpeg`), saying why.
        this.unplayable = `this browser does not play ${codec}`;
        this.element.dataset.codec = codec;
        this.element.dataset.mode = "unplayable";
        this.info.textContent = this.unplayable;
        return;
      }
      this.buffer = this.media.addSourceBuffer(type);
      this.buffer.mode = "segments";
      this.buffer.addEventListener("updateend", () => { this.start(); this.pump(); });
      this.queue.push(joined(this.head));
      this.element.dataset.codec = codec;
    } else {
      this.queue.push(bytes);
    }
    this.pump();
  }

  pump() {
    const buffer = this.buffer, v = this.video;
    if (!buffer || buffer.updating || this.media.readyState !== "open") return;
    this.skipGap();
    if (this.queue.length) {
      buffer.appendBuffer(joined(this.queue.splice(0)));
    } else if (v.buffered.length && v.currentTime - v.buffered.start(0) > 30) {
      buffer.remove(0, v.currentTime - 10);  // keep memory flat
    }
  }

  // Frames the source did not send (it stopped for a while) leave a gap in what is
  // buffered, where a player waits for ever: play on from after it.
  skipGap() {
    const v = this.video, ranges = v.buffered;
    for (let i = 0; i < ranges.length; i++) {
      if (ranges.start(i) > v.currentTime + 0.01 && (i === 0 || ranges.end(i - 1) <= v.currentTime + 0.1)) {
        v.currentTime = Math.max(ranges.start(i), ranges.end(ranges.length - 1) - this.target);
        return;
      }
    }
  }

  // How far behind the newest frame to play: long enough for the detectors' objects of a
  // frame to arrive before it is shown.
  get target() {
    const lag = this.lags.length ? Math.max(...this.lags) : 250;
    return Math.min(Math.max(lag + 100, 100), 2000) / 1000;
  }

  start() {
    const v = this.video;
    if (!v.buffered.length || this.started === v.src) return;
    this.started = v.src;
    v.currentTime = Math.max(v.buffered.start(0), v.buffered.end(v.buffered.length - 1) - this.target);
    v.play().catch(() => {});
  }

  // Each frame the browser presents: the objects of its media time, drawn for it.
  presented(now, frame) {
    const v = this.video;
    v.requestVideoFrameCallback((next, meta) => this.presented(next, meta));
    if (!this.playing) {
      this.playing = true;
      this.image.hidden = true;
      this.video.hidden = false;
      this.element.dataset.mode = "video";
    }
    const t = frame.mediaTime;
    const drawn = [];
    const times = {};
    for (const list of this.groups.values()) {
      let i = list.length - 1;
      while (i >= 0 && list[i].time > t + 1e-4) i--;
      if (i < 0) continue;
      const group = list[i];
      const kind = sightline.kinds.find((k) => k.name === group.kind);
      const held = Math.abs(group.time - t) > 1e-4;
      if (kind && group.objects.length) drawn.push({ kind, objects: group.objects, held });
      times[group.kind] = { time: group.time, held };
    }
    sightline.drawObjects(this.overlay, frame.width, frame.height, drawn);
    const data = this.element.dataset;
    data.mediaTime = t;
    data.presented = Number(data.presented || 0) + 1;
    // Every frame that reached the player, shown or dropped (how the tests tell full rate).
    data.totalFrames = v.getVideoPlaybackQuality().totalVideoFrames;
    data.facesTime = times.faces ? times.faces.time : "";
    data.facesHeld = times.faces ? times.faces.held : "";
    const wall = this.clock.get(t.toFixed(6));
    let delay = null;
    if (wall !== undefined) {
      delay = performance.timeOrigin + now - wall / 1e6;
      this.delays.push(delay);
      if (this.delays.length > 2000) this.delays.shift();
    }
    // Stay `target` behind the newest frame: a little faster when further, slower when nearer.
    if (v.buffered.length) {
      const lead = v.buffered.end(v.buffered.length - 1) - v.currentTime;
      if (lead > this.target + 3) v.currentTime = v.buffered.end(v.buffered.length - 1) - this.target;
      else v.playbackRate = lead > this.target + 0.2 ? 1.1 : lead < this.target - 0.05 ? 0.9 : 1;
    }
    if (data.presented % 10 === 0) {
      const quality = v.getVideoPlaybackQuality();
      this.info.textContent = [`${frame.width}x${frame.height}`, `t = ${t.toFixed(3)} s`,
        delay === null ? "" : `capture to paint ${delay.toFixed(0)} ms`,
        `${quality.droppedVideoFrames} dropped`].filter(Boolean).join(" · ");
    }
  }
}

// The grid's two connections, for every tile at once (a browser opens at most six to a
// host): one for every source's video, framed by source, and one for every source's
// objects and JPEG frames. Opened again when the sources change, or when one ends.
class LiveGrid {
  constructor(tiles) {
    this.tiles = tiles;
    this.sources = "";
    this.generation = 0;
  }

  watch(ids) {
    const list = [...ids].sort().join(",");
    if (!list || list === this.sources) return;
    this.sources = list;
    const generation = ++this.generation;
    for (const tile of this.tiles.values()) tile.restart();
    if (this.messages) this.messages.close();
    this.messages = new EventSource(`/api/grid/stream?sources=${encodeURIComponent(list)}`);
    this.messages.addEventListener("objects", (event) => {
      const message = JSON.parse(event.data);
      this.tiles.get(message.source)?.objects(message);
    });
    this.messages.addEventListener("frame", (event) => {
      const frame = JSON.parse(event.data);
      this.tiles.get(frame.source)?.frame(frame);
    });
    this.readVideo(list, generation);
  }

  async readVideo(list, generation) {
    try {
      const response = await fetch(`/api/grid/video?sources=${encodeURIComponent(list)}`, { credentials: "same-origin" });
      const reader = response.body.getReader();
      let pending = new Uint8Array(0);
      for (;;) {
        const { value, done } = await reader.read();
        if (done || generation !== this.generation) break;
        pending = joined([pending, value]);
        // [length: u32][id length: u8][id][bytes], length counting what follows it.
        while (pending.length >= 5) {
          const length = new DataView(pending.buffer, pending.byteOffset).getUint32(0);
          if (pending.length < 4 + length) break;
          const idLength = pending[4];
          const id = new TextDecoder().decode(pending.subarray(5, 5 + idLength));
          this.tiles.get(id)?.videoBytes(pending.slice(5 + idLength, 4 + length));
          pending = pending.slice(4 + length);
        }
      }
    } catch (_) { /* the console went away: try again below */ }
    if (generation !== this.generation) return;
    // The page fell behind, or the console restarted: every tile starts again.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (generation === this.generation) { this.sources = ""; this.watch(list.split(",")); }
  }
}

sightline.LiveTile = LiveTile;
sightline.LiveGrid = LiveGrid;
