// The script of lact serve's page (serve/page.html, as the server sends it) run under Node with a stub DOM and
// Node's WebSocket, against a running server: what a browser's user does, without a browser. It waits for the
// first frame, drags the view (an orbit), snaps to a test view with the ground truth shown, records a path while
// dragging and downloads it (with a 3rd argument "video", renders it on the server and saves the MP4), then prints one JSON line of what the page showed. tests/cli/serve_test.py runs it
// (node --experimental-websocket tests/browser/serve_page_harness.js URL TEST_VIEW).
// Other 3rd arguments run one check after the first frame instead (each prints its JSON line):
//   failed: moves to scene TEST_VIEW (one whose encode fails) and reads the stage and the camera's answer;
//   sizes: records a path and adds keyframes across a change of the render resolution, and zooms out 300 notches;
//   oversize: sends a message over the server's limit on the page's stream and reads why it closed;
//   reconnect: orbits, prints {"restart": true} (the test then stops the server), waits for the page's second try,
//   prints {"start": true} (the test starts it again on the same port) and reads what the page shows.
"use strict";
const http = require("http");

const [url, testView, mode] = [process.argv[2], Number(process.argv[3]), process.argv[4] || ""];
const withVideo = mode === "video";
const parsed = new URL(url);

function fetchPage() {
  return new Promise((resolve, reject) => {
    http.get(url, (response) => {
      let body = "";
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () => (response.statusCode === 200 ? resolve(body) : reject(new Error(body))));
    }).on("error", reject);
  });
}

// Elements: what the page's script touches.
const elements = new Map();
function element(tag) {
  return {
    tagName: (tag || "div").toUpperCase(), textContent: "", style: {}, hidden: false, dataset: {}, children: [],
    width: 64, height: 64, clientWidth: 800, clientHeight: 600, handlers: {}, title: "", className: "", href: "",
    download: "", classList: { toggle() {} }, draws: 0,
    appendChild(child) { this.children.push(child); },
    addEventListener(type, handler) { this.handlers[type] = handler; },
    getContext() {
      const self = this;
      return { drawImage() { self.draws++; }, clearRect() {}, fillRect() {}, beginPath() {}, moveTo() {}, lineTo() {},
               stroke() {}, putImageData() {}, createImageData: (w, h) => ({ data: new Uint8ClampedArray(w * h * 4) }) };
    },
    getBoundingClientRect() { return { x: 0, y: 0, width: this.width, height: this.height }; },
    setPointerCapture() {}, focus() {}, querySelectorAll() { return []; },
    click() { downloads.push(this); },
  };
}
const downloads = [];
const windowHandlers = {};
globalThis.document = {
  getElementById(id) { if (!elements.has(id)) elements.set(id, element("div")); return elements.get(id); },
  createElement: (tag) => element(tag),
};
globalThis.location = { search: parsed.search, protocol: parsed.protocol, host: parsed.host };
globalThis.window = { addEventListener(type, handler) { windowHandlers[type] = handler; } };
globalThis.requestAnimationFrame = (f) => setTimeout(() => f(performance.now()), 16);
globalThis.createImageBitmap = async (blob) => ({ width: 64, height: 64, bytes: blob.size });
const sockets = [];  // the page's streams
const sentCameras = [];  // [the index of its stream, the camera message's text]
globalThis.WebSocket = class extends WebSocket {
  constructor(target) {
    super(target);
    sockets.push(this);
    // A browser follows a failed connection's error with a close (1006); Node 20's WebSocket fires the error alone
    // and stays CONNECTING.
    this.addEventListener("error", () => setTimeout(() => {
      if (this.readyState === 0 && this.onclose) this.onclose({ code: 1006, reason: "" });
    }, 50));
  }
  send(data) {
    const message = data.startsWith("{") ? JSON.parse(data) : {};  // the oversize check sends no JSON
    if (message.type === "camera") sentCameras.push([sockets.indexOf(this), JSON.stringify(message.camera)]);
    super.send(data);
  }
};
const nodeFetch = globalThis.fetch;  // a page's relative URLs resolve against it, as in a browser
globalThis.fetch = (target, options) => nodeFetch(new URL(target, url), options);
const blobs = new Map();
URL.createObjectURL = (blob) => { const key = "blob:" + blobs.size; blobs.set(key, blob); return key; };
URL.revokeObjectURL = () => {};

const text = (id) => document.getElementById(id).textContent;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(condition, what, ms = 120000) {
  const end = Date.now() + ms;
  while (Date.now() < end) { if (condition()) return; await sleep(20); }
  throw new Error("timed out waiting for " + what + " (stage " + text("stage") + ", message " + text("message") + ")");
}
function pointer(type, x, y) {
  document.getElementById("main").handlers[type]({ pointerId: 1, clientX: x, clientY: y, button: 0, shiftKey: false,
                                                   preventDefault() {} });
}
async function drag(dx, dy) {
  pointer("pointerdown", 400, 300);
  for (let i = 1; i <= 10; ++i) { pointer("pointermove", 400 + dx * i / 10, 300 + dy * i / 10); await sleep(30); }
  pointer("pointerup", 400 + dx, 300 + dy);
}

async function renderVideo(out) {
  document.getElementById("rendervideo").onclick();
  await until(() => downloads.some((a) => a.download === "lact_path.mp4"), "the video");
  const video = downloads.find((a) => a.download === "lact_path.mp4");
  out.video = Buffer.from(await blobs.get(video.href).arrayBuffer()).toString("base64");
  out.video_info = text("videoinfo");
}

// The scene list's choice of scene `index`: its failure on the status line, and the answer to the page's camera.
async function failedScene(index) {
  const select = document.getElementById("scenes");
  select.value = String(index);
  select.onchange();
  await until(() => text("stage").startsWith("failed: "), "the failure on the status line");
  await until(() => text("message") !== "", "an answer to the camera sent");
  return { stage: text("stage"), message: text("message") };
}

const click = (id) => document.getElementById(id).onclick();
function chooseResolution(factor) {
  const select = document.getElementById("resolution");
  select.value = String(factor);
  select.onchange();
}
// Runs `change` (a camera change) and waits for its frames to settle: a new frame at rest, or a refusal.
async function settled(change) {
  const view = document.getElementById("view"), before = view.draws;
  await change();
  await until(() => (view.draws > before && text("format") === "png") || text("message") !== "", "the frame at rest");
}

// A recorded path, keyframes and the zoom across sizes: what the server answers of each.
async function sizes() {
  const out = {};
  for (const [id, value] of [["path_duration", "4"], ["path_fps", "30"], ["path_smooth", "0"]])
    document.getElementById(id).value = value;  // the page's defaults (the stub has no HTML)
  click("record");
  await settled(() => drag(60, 0));
  chooseResolution(2);
  await settled(() => drag(60, 0));
  out.size_after = text("size");
  click("record");
  click("savepath");
  out.path = JSON.parse(await blobs.get(downloads.find((a) => a.download === "lact_path.json").href).text());
  click("rendervideo");
  await until(() => text("videoinfo") !== "", "the video's answer");
  out.video_info = text("videoinfo");
  click("key_add");
  chooseResolution(1);
  await settled(() => drag(-60, 0));
  click("key_add");
  document.getElementById("timeline").oninput();
  await until(() => text("timeline_value") !== "" || text("path_message") !== "", "the interpolated path");
  out.path_message = text("path_message");
  out.timeline = text("timeline_value");
  await settled(async () => {
    for (let i = 0; i < 300; ++i) document.getElementById("main").handlers.wheel({ deltaY: 100, preventDefault() {} });
  });
  out.zoomed_message = text("message");
  out.zoomed_format = text("format");
  return out;
}

async function oversize() {
  sockets[0].send("x".repeat(70000));
  await until(() => text("stage").startsWith("disconnected"), "the stream closed");
  return { stage: text("stage") };
}

// The server restarted under the page: the status line meanwhile, and the camera the page sends once it is back.
async function reconnect() {
  await settled(() => drag(80, 0));
  const before = { role: text("role"), camera: sentCameras[sentCameras.length - 1][1], title: document.title };
  console.log(JSON.stringify({ restart: true }));
  await until(() => text("stage").startsWith("disconnected"), "the stream closed");
  const closed = text("stage");
  await until(() => sockets.length > 1 && text("stage").startsWith("disconnected") && text("stage") !== closed,
              "a second try", 60000);
  const retried = text("stage");
  console.log(JSON.stringify({ start: true }));  // the test starts the server again now
  await until(() => sentCameras.some(([socket]) => socket > 0) && text("stage").startsWith("ready"), "the stream back");
  const view = document.getElementById("view"), draws = view.draws;
  await until(() => view.draws > draws && text("format") === "png", "a frame after the restart");
  const after = sentCameras.find(([socket]) => socket > 0)[1];
  return { closed, retried, before, role_after: text("role"), same_camera: after === before.camera, streams: sockets.length };
}

async function main() {
  const page = await fetchPage();
  const script = page.slice(page.indexOf("<script>") + 8, page.indexOf("</script>"));
  new Function(script)();
  const view = document.getElementById("view");
  await until(() => text("stage").startsWith("ready") && text("format") === "png", "the first frame");
  const checks = { failed: () => failedScene(testView), sizes, oversize, reconnect };
  if (checks[mode]) {
    console.log(JSON.stringify(await checks[mode]()));
    process.exit(0);
  }
  const out = { first_role: text("role"), first_draws: view.draws, stage: text("stage") };
  document.getElementById("record").onclick();
  await drag(150, 40);
  await until(() => text("role") === "free" && text("format") === "jpeg", "a moving frame");
  out.moving_format = text("format");
  await until(() => text("format") === "png", "the frame at rest");
  out.rest_role = text("role");
  document.getElementById("record").onclick();
  document.getElementById("savepath").onclick();
  const saved = downloads.find((a) => a.download === "lact_path.json");
  out.path = JSON.parse(await blobs.get(saved.href).text());
  // The recorded path rendered on the server (with "video": ffmpeg there): its MP4 saved when the stream says done.
  if (withVideo) await renderVideo(out);
  document.getElementById("truth").onclick();
  const button = document.getElementById("views").children.find((b) => Number(b.dataset.view) === testView);
  button.onclick();
  await until(() => text("role").startsWith(testView + " ") && text("psnr") !== "-", "the test view's PSNR");
  out.test_role = text("role");
  out.psnr = text("psnr");
  out.ssim = text("ssim");
  out.baseline = text("baseline");
  out.lpips = text("lpips");
  out.truth_shown = !document.getElementById("truth_tile").hidden;
  out.draws = view.draws;
  document.getElementById("download").onclick();
  out.frame_download = downloads.some((a) => a.download === "lact_frame.png");
  console.log(JSON.stringify(out));
  process.exit(0);
}
main().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
