#!/usr/bin/env bash
# report.html in a real browser (tag `manual`): two kvcheck runs write reports (one
# passing: every kernel's histograms, killed defects, a cache strategy; one failing: an engine
# with a bug, so the Failures section), headless Chromium renders each, and the test fails when
#   - the page logs a console error, throws, or fails to load anything (a missing image or
#     style counts: the Log domain's "Failed to load resource" errors);
#   - the page requests anything but itself (the report must be self-contained) or has a
#     <script> (no JavaScript);
#   - the rendered DOM lacks the title, the verdict, a section or the charts (<svg>);
#   - content sticks out to the right of a 1280 px window (a horizontal scroll bar), or labels
#     in one chart overlap or are cut off by their chart's edge;
#   - the screenshot is blank: the PNG is decoded (zlib, no imaging library) and must have
#     enough pixels off the background colour, and the colours of the histogram bars, the
#     defect bars and the strategy bars must be on screen.
# Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe; no port,
# no network). The screenshots and the reports are left in the test's undeclared outputs
# (bazel-testlogs/report/html_in_chromium_test/test.outputs/).
#
# Needs Debian's chromium (tools/setup.sh --browser, or apt-get install chromium) and
# /usr/bin/python3 (the checker uses the standard library only; the failing engine numpy):
#   bazel test //report:html_in_chromium_test
# Outside Bazel:
#   report/html_in_chromium_test.sh bazel-bin/cli/kvcheck engines/python/numpy_model.py
set -uo pipefail
kvcheck=$1
numpy_model=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
work=${TEST_TMPDIR:-$(mktemp -d)}
outputs=${TEST_UNDECLARED_OUTPUTS_DIR:-$work}
python=/usr/bin/python3

chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $chromium ]]; then
  echo "FAIL: this test needs Chromium: tools/setup.sh --browser (or apt-get install chromium)"
  exit 1
fi
if [[ ! -x $python ]]; then
  echo "FAIL: this test needs $python (Debian's python3)"
  exit 1
fi

# kvcheck_report NAME EXIT_CODE FLAGS...: a kvcheck run writing $work/NAME/report.html.
kvcheck_report() {
  local name=$1 want=$2
  shift 2
  "$kvcheck" "$@" --report="$work/$name" --failures_dir="$work/$name-failures" \
    >"$work/$name.log" 2>&1
  local code=$?
  if [[ $code -ne $want ]]; then
    echo "FAIL: kvcheck exited $code (want $want): $*"
    tail -30 "$work/$name.log"
    exit 1
  fi
  [[ -s $work/$name/report.html ]] || { echo "FAIL: kvcheck wrote no report.html: $*"; exit 1; }
  cp "$work/$name/report.html" "$outputs/$name.html"
}
# Every kernel's histograms (31), the defect bars and table, a strategy's bars and table, the
# properties table (about 4 s on 2 cores).
kvcheck_report passing 0 --property=attention/kernels_vs_reference,cache/prealloc/f32 \
  --defect=metal_element_offsets,prealloc_clone_shares_buffer --cases=20 --threads=2
# The Failures section: the message (a <pre>) and the replay command (under a second).
kvcheck_report failing 1 --engine="/usr/bin/python3 $numpy_model --bug=positions_from_cache" \
  --property=model/numpy_lm_window/cached_equals_recomputation --cases=20

cat >"$work/render_check.py" <<'PYTHON'
"""Renders one HTML file in headless Chromium over the DevTools pipe and checks it.

render_check.py CHROMIUM HTML PNG_OUT PROFILE_DIR LOG [--text T]... [--colour NAME=RRGGBB]...
  [--charts]: the page must show each text, have each colour on screen (at least 100 px of it)
  and, with --charts, have <svg> charts."""
import argparse, base64, collections, fcntl, json, os, select, struct, subprocess, sys, time, zlib

parser = argparse.ArgumentParser()
for name in ("chromium", "html", "png_out", "profile", "log_path"):
    parser.add_argument(name)
parser.add_argument("--text", action="append", default=[])
parser.add_argument("--colour", action="append", default=[])
parser.add_argument("--charts", action="store_true")
args = parser.parse_args()
chromium, html, png_out, profile, log_path = (
    args.chromium, args.html, args.png_out, args.profile, args.log_path)
WIDTH = 1280
url = "file://" + os.path.abspath(html)
problems = []
notes = []


def problem(text):
    problems.append(text)


# --- Chromium on a pipe: it reads commands from fd 3 and writes replies to fd 4. ---
def high_fd(fd):
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


cmd_r, cmd_w = map(high_fd, os.pipe())
res_r, res_w = map(high_fd, os.pipe())


def child_fds():
    os.dup2(cmd_r, 3)
    os.dup2(res_w, 4)


log = open(log_path, "wb")
browser = subprocess.Popen(
    [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
     "--no-first-run", "--no-default-browser-check", "--disable-extensions",
     "--disable-background-networking", "--disable-component-update", "--disable-sync",
     "--hide-scrollbars", "--mute-audio", "--user-data-dir=" + profile,
     "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=%d,1000" % WIDTH,
     "--remote-debugging-pipe", "about:blank"],
    stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=child_fds, pass_fds=(3, 4))
os.close(cmd_r)
os.close(res_w)

buffered = b""
events = []
next_id = 0
deadline = time.time() + 90


def read_messages(timeout):
    global buffered
    ready, _, _ = select.select([res_r], [], [], max(0.0, timeout))
    if not ready:
        return []
    chunk = os.read(res_r, 1 << 20)
    if not chunk:
        raise RuntimeError("Chromium closed the DevTools pipe (crashed?)")
    buffered += chunk
    *messages, buffered = buffered.split(b"\0")
    return [json.loads(m) for m in messages if m]


def send(method, params=None, session=None):
    global next_id
    next_id += 1
    message = {"id": next_id, "method": method, "params": params or {}}
    if session:
        message["sessionId"] = session
    os.write(cmd_w, json.dumps(message).encode() + b"\0")
    while True:
        if time.time() > deadline:
            raise RuntimeError("no reply to %s in time" % method)
        for m in read_messages(deadline - time.time()):
            if m.get("id") == next_id:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                events.append(m)


def wait_for(method, seconds):
    end = min(deadline, time.time() + seconds)
    while time.time() < end:
        if any(e["method"] == method for e in events):
            return True
        for m in read_messages(end - time.time()):
            if "method" in m:
                events.append(m)
    return any(e["method"] == method for e in events)


def drain(seconds):
    end = time.time() + seconds
    while time.time() < end:
        events.extend(m for m in read_messages(end - time.time()) if "method" in m)


try:
    page = None
    while page is None:  # the first tab may appear a moment after the browser
        page = next((t for t in send("Target.getTargets")["targetInfos"]
                     if t["type"] == "page"), None)
        if page is None:
            if time.time() > deadline - 60:
                raise RuntimeError("Chromium opened no page")
            drain(0.2)
    session = send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})[
        "sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        send(domain + ".enable", session=session)
    send("Emulation.setDeviceMetricsOverride",
         {"width": WIDTH, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session)
    events.clear()  # about:blank's
    nav = send("Page.navigate", {"url": url}, session)
    if nav.get("errorText"):
        problem("navigation to %s failed: %s" % (url, nav["errorText"]))
    if not wait_for("Page.loadEventFired", 30):
        problem("the page did not finish loading in 30 s")
    drain(0.5)  # late console messages and resource errors

    # What the page and its loads said.
    requests = {}
    for e in events:
        method, p = e["method"], e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
            problem("console.%s: %s" % (p["type"], text))
        elif method == "Runtime.consoleAPICalled":
            notes.append("console.%s on the page" % p["type"])
        elif method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            problem("uncaught exception: %s %s" % (
                d.get("text", ""), d.get("exception", {}).get("description", "")))
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            entry = p["entry"]
            problem("console error (%s): %s %s" % (entry["source"], entry["text"],
                                                   entry.get("url", "")))
        elif method == "Log.entryAdded":
            notes.append("console %s: %s" % (p["entry"]["level"], p["entry"]["text"]))
        elif method == "Network.requestWillBeSent":
            requests[p["requestId"]] = p["request"]["url"]
            if p["request"]["url"] != url and not p["request"]["url"].startswith("data:"):
                problem("the page requested %s: it must be self-contained"
                        % p["request"]["url"])
        elif method == "Network.loadingFailed":
            problem("loading %s failed: %s" % (requests.get(p["requestId"], "?"),
                                              p.get("errorText", "")))
        elif method == "Inspector.targetCrashed":
            problem("the page crashed")

    # The rendered DOM and its layout.
    probe = r"""(() => {
      const view = document.documentElement.clientWidth;
      const describe = (el) => el.tagName.toLowerCase() + ' "' +
          (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60) + '"';
      const sticking = [];
      for (const el of document.body.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.right > view + 0.5 && !(el.parentElement &&
            el.parentElement.getBoundingClientRect().right > view + 0.5)) {
          sticking.push(describe(el) + ' ends at x=' + Math.round(r.right));
        }
      }
      const labels = [];
      document.querySelectorAll('svg').forEach((svg, i) => {
        const box = svg.getBoundingClientRect();
        const name = svg.getAttribute('aria-label') || ('chart ' + (i + 1));
        const texts = [...svg.querySelectorAll('text')].map(t => [t, t.getBoundingClientRect()]);
        for (const [t, r] of texts) {
          if (r.left < box.left - 0.5 || r.right > box.right + 0.5 ||
              r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
            labels.push(name + ': label "' + t.textContent + '" is cut off by the chart edge');
          }
        }
        // Overlapping: their boxes share more than 1 px across and more than 40% of the
        // lower one's height (font boxes include the line's descent: two lines of 10 px text
        // 9 px apart share 2 px without touching).
        for (let a = 0; a < texts.length; ++a) for (let b = a + 1; b < texts.length; ++b) {
          const [ta, ra] = texts[a], [tb, rb] = texts[b];
          const across = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
          const down = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
          if (across > 1 && down > 0.4 * Math.min(ra.height, rb.height)) {
            labels.push(name + ': labels "' + ta.textContent + '" and "' + tb.textContent +
                        '" overlap');
          }
        }
      });
      return {
        title: document.title,
        text: document.body.innerText,
        headings: [...document.querySelectorAll('h1, h2')].map(h => h.textContent),
        svgs: [...document.querySelectorAll('svg')].map(s => {
          const r = s.getBoundingClientRect();
          return [r.width, r.height, s.querySelectorAll('rect').length,
                  s.textContent.includes('no elements checked')];
        }),
        scripts: document.scripts.length,
        scrollWidth: document.documentElement.scrollWidth,
        view: view,
        sticking: sticking.slice(0, 10),
        labels: labels,
      };
    })()"""
    dom = send("Runtime.evaluate", {"expression": probe, "returnByValue": True}, session)
    if "exceptionDetails" in dom:
        raise RuntimeError("the DOM probe threw: %s" % dom["exceptionDetails"])
    dom = dom["result"]["value"]
    if dom["title"] != "kvcheck report":
        problem("the title is %r, not 'kvcheck report'" % dom["title"])
    for text in args.text:
        if text not in dom["text"]:
            problem("the rendered page does not show %r" % text)
    if args.charts and not dom["svgs"]:
        problem("the rendered page has no <svg> chart")
    for i, (w, h, rects, says_empty) in enumerate(dom["svgs"]):
        # A histogram of a kernel with no elements says so instead of drawing bars.
        if w < 50 or h < 20 or (rects == 0 and not says_empty):
            problem("chart %d renders %dx%d px with %d bars" % (i + 1, w, h, rects))
    if dom["scripts"]:
        problem("the page has %d <script> elements (it must need no JavaScript)" % dom["scripts"])
    if dom["scrollWidth"] > dom["view"]:
        problem("the page is %d px wide in a %d px window (a horizontal scroll bar): %s" % (
            dom["scrollWidth"], dom["view"], "; ".join(dom["sticking"]) or "?"))
    for line in dom["labels"][:20]:
        problem(line)
    if len(dom["labels"]) > 20:
        problem("... and %d more label problems" % (len(dom["labels"]) - 20))

    # A full-page screenshot.
    size = send("Page.getLayoutMetrics", session=session)["cssContentSize"]
    height = int(min(max(size["height"], 200), 16000) + 0.999)
    send("Emulation.setDeviceMetricsOverride",
         {"width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
    shot = send("Page.captureScreenshot", {"format": "png"}, session)
    png = base64.b64decode(shot["data"])
    with open(png_out, "wb") as f:
        f.write(png)
    try:
        send("Browser.close")
    except RuntimeError:
        pass
finally:
    try:
        browser.wait(timeout=10)
    except subprocess.TimeoutExpired:
        browser.kill()
        browser.wait()


# --- The screenshot: decode the PNG (8-bit RGB or RGBA, not interlaced) and look at it. ---
def decode_png(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    w, h, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("unexpected PNG format: depth %d, colour type %d, interlace %d"
                         % (depth, colour, interlace))
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, [[r[i:i + 3] for i in range(0, stride, bpp)] for r in rows]


w, h, pixels = decode_png(png)
counts = collections.Counter(p for row in pixels for p in row)
background, most = counts.most_common(1)[0]
off = w * h - most
print("%s: %dx%d px, %d bytes, %d colours, %.1f%% off the background %s" % (
    os.path.basename(png_out), w, h, len(png), len(counts), 100.0 * off / (w * h),
    background.hex()))
if w != WIDTH or h < 400:
    problem("the screenshot is %dx%d px (want %d wide, at least 400 high)" % (w, h, WIDTH))
if off < 0.02 * w * h or len(counts) < 16:
    problem("the screenshot is blank or nearly: %d colours, %d px off the background"
            % (len(counts), off))
for colour in args.colour:
    name, _, hex_rgb = colour.rpartition("=")
    seen = counts.get(bytes.fromhex(hex_rgb), 0)
    if seen < 100:
        problem("the screenshot shows no %s (#%s): %d px of that colour" % (name, hex_rgb, seen))

for n in notes:
    print("note:", n)
for p in problems:
    print("FAIL:", p)
print("%d problems" % len(problems))
sys.exit(1 if problems else 0)
PYTHON

# render NAME CHECKS...: renders $work/NAME/report.html into $outputs/NAME.png and checks it.
status=0
render() {
  local name=$1
  shift
  echo "--- $name.html"
  if ! "$python" "$work/render_check.py" "$chromium" "$work/$name/report.html" \
      "$outputs/$name.png" "$work/$name-profile" "$work/$name-chromium.log" \
      --text="kvcheck report" --text=Properties "$@"; then
    local log
    log=$(grep -v -e dbus -e "unexpected operator" "$work/$name-chromium.log" | tail -20)
    [[ -z $log ]] || printf "Chromium's log (without its D-Bus complaints):\n%s\n" "$log"
    status=1
  fi
}
render passing --charts --text=PASSED --text="Attention kernels against the reference" \
  --text="flash/scalar" --text="Defect catalogue" --text=metal_element_offsets \
  --text=prealloc_clone_shares_buffer --text="Cache strategies (state machines)" \
  --text=attention/kernels_vs_reference --text=cache/prealloc/f32 \
  --colour="histogram bars=3b82f6" --colour="cases-to-kill bars=7c3aed" \
  --colour="seconds-to-kill bars=0d9488" --colour="commands-per-second bars=2563eb"
render failing --text=FAILED --text=Failures --text="kvcheck replay" \
  --text=model/numpy_lm_window/cached_equals_recomputation --text="positions_from_cache"
if [[ $status -ne 0 && -n ${TEST_UNDECLARED_OUTPUTS_DIR:-} ]]; then
  echo "The screenshots and the reports: bazel-testlogs/report/html_in_chromium_test/test.outputs"
elif [[ $status -ne 0 ]]; then
  echo "The screenshots and the reports: $outputs"
fi
exit $status
