// Shared by the console's pages: JSON fetching, the SVG overlay, orientations, ISO 6709.
"use strict";

const sightline = (window.sightline = window.sightline || {});

sightline.json = async function (url) {
  const response = await fetch(url, { credentials: "same-origin" });
  const text = await response.text();
  let body = null;
  try { body = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!response.ok) {
    const message = (body && body.error && (body.error.message || body.error)) || text || response.statusText;
    throw new Error(`${response.status}: ${message}`);
  }
  return body;
};

sightline.escape = (text) => String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

sightline.duration = function (seconds) {
  const s = Math.max(0, seconds);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), rest = (s % 60).toFixed(1);
  return (h ? `${h}:${String(m).padStart(2, "0")}:` : `${m}:`) + rest.padStart(4, "0");
};

sightline.bytes = function (n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
};

const SVG = "http://www.w3.org/2000/svg";

// Draws one <rect> per object over a frame of width x height pixels, for groups of
// { kind, objects, held }, where kind is one of sightline.kinds (kinds.js): each rect has
// the kind's object name as its class and colour, its ID in data-<object name>-id
// (data-face-id, data-code-id), its type in data-object-type when it has one (a code's
// symbology, a detected object's type) and its normalised bounds in data-bounds="x y w h"; the
// kind's label (a face's name and ID, a code's text) is written above it, in the object's
// colour (its type's, for other detectors' objects).
sightline.drawObjects = function (svg, width, height, groups) {
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("preserveAspectRatio", "none");
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  for (const { kind, objects, held } of groups) {
    for (const object of objects || []) {
      const [x, y, w, h] = object.bounds;
      const label = object.label || `${kind.objectName} ${object.id}`;
      const colour = object.colour || kind.colour;
      const rect = document.createElementNS(SVG, "rect");
      rect.setAttribute("class", kind.objectName + (held ? " held" : ""));
      rect.style.stroke = colour;
      rect.setAttribute("x", x * width);
      rect.setAttribute("y", y * height);
      rect.setAttribute("width", w * width);
      rect.setAttribute("height", h * height);
      rect.setAttribute(`data-${kind.objectName}-id`, object.id);
      if (object.name) rect.setAttribute("data-name", object.name);
      if (object.type) rect.setAttribute("data-object-type", object.type);
      rect.setAttribute("data-bounds", object.bounds.join(" "));
      const title = document.createElementNS(SVG, "title");
      title.textContent = `${object.type || kind.objectName} ${object.id}: ${label}`;
      rect.appendChild(title);
      svg.appendChild(rect);
      const text = document.createElementNS(SVG, "text");
      text.setAttribute("class", kind.objectName);
      text.style.fill = colour;
      text.setAttribute("x", x * width + 2);
      text.setAttribute("y", Math.max(14, y * height - 4));
      text.textContent = label;
      svg.appendChild(text);
    }
  }
};

// EXIF orientation (1-8) as the CSS transform that shows a stored frame upright, and
// whether it swaps width and height.
sightline.orientationTransform = function (value) {
  return {
    1: "none", 2: "scaleX(-1)", 3: "rotate(180deg)", 4: "scaleY(-1)",
    5: "rotate(90deg) scaleY(-1)", 6: "rotate(90deg)", 7: "rotate(90deg) scaleX(-1)", 8: "rotate(-90deg)",
  }[value] || "none";
};
sightline.orientationSwaps = (value) => value >= 5 && value <= 8;
// The quarter turns in an orientation, clockwise (what a browser applies of a track matrix).
sightline.orientationDegrees = (value) => ({ 3: 180, 4: 180, 5: 90, 6: 90, 7: 270, 8: 270 })[value] || 0;

// ISO 6709 text such as +48.8577+002.2950+035.000/ as readable degrees.
sightline.iso6709 = function (text) {
  const match = /^([+-]\d+(?:\.\d+)?)([+-]\d+(?:\.\d+)?)([+-]\d+(?:\.\d+)?)?/.exec(text || "");
  if (!match) return text || "";
  const lat = parseFloat(match[1]), lon = parseFloat(match[2]);
  let out = `${Math.abs(lat).toFixed(5)}° ${lat >= 0 ? "N" : "S"}, ${Math.abs(lon).toFixed(5)}° ${lon >= 0 ? "E" : "W"}`;
  if (match[3] !== undefined) out += `, ${parseFloat(match[3]).toFixed(1)} m`;
  return out;
};

// The value of the group shown at `seconds`: the last group starting at or before then,
// unless its duration has run out. Groups are sorted by start.
sightline.activeGroup = function (groups, seconds) {
  let low = 0, high = groups.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (groups[middle].t <= seconds + 1e-6) low = middle + 1; else high = middle;
  }
  if (low === 0) return null;
  const group = groups[low - 1];
  if (group.d !== undefined && group.d !== null && seconds >= group.t + group.d - 1e-6) return null;
  return group.v === undefined ? null : group.v;
};

// Asks the console for a clip (POST `url`), shows its progress while it is made, then
// offers it for download under its name (docs/console.md, "Clips").
sightline.makeClip = async function (url, progress, state) {
  state.textContent = "Making the clip…";
  try {
    const response = await fetch(url, { method: "POST", credentials: "same-origin" });
    let status = await response.json();
    if (!response.ok) throw new Error(status.error?.message || response.statusText);
    progress.hidden = false;
    while (status.state === "making") {
      progress.value = status.fraction;
      await new Promise((resolve) => setTimeout(resolve, 250));
      status = await sightline.json(`/api/clips/${status.id}`);
    }
    progress.hidden = true;
    if (status.state === "failed") throw new Error(status.error);
    state.innerHTML = `<a id="clipLink" download="${sightline.escape(status.name)}" href="/api/clips/${status.id}/file">` +
      `${sightline.escape(status.name)}</a> (${sightline.bytes(status.bytes)})`;
    document.getElementById("clipLink").click();
  } catch (error) {
    progress.hidden = true;
    state.textContent = `The clip could not be made: ${error.message}`;
  }
};

sightline.header = function (title) {
  document.title = `${title} · Sightline`;
  const header = document.createElement("header");
  header.innerHTML = `<h1>Sightline</h1><a href="/">Sources</a><a href="/recordings">Recordings</a><a href="/events">Events</a><span class="muted">${sightline.escape(title)}</span>`;
  document.body.prepend(header);
};
