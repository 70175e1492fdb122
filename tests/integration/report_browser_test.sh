#!/usr/bin/env bash
# Renders a `strata compare` HTML report in Debian's headless chromium and checks that
# the page renders (a non-trivial screenshot with the chart colours in it), that the
# HTML holds the three SVG charts and no scripts or external assets, and that each
# inline <svg> is well-formed XML. The Markdown and JSON formats are checked too.
# Usage: report_browser_test.sh STRATA_BINARY      (exit 77 = skipped: no chromium)
set -euo pipefail
strata=${1:?usage: report_browser_test.sh STRATA_BINARY}
chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium)"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A pipelined candidate set, so the Gantt chart shows stages and the memory chart stages.
cat > "$tmp/strategies.yaml" <<'EOF'
strategies:
  - {tp: 1, pp: 1, micro_batch: 4}
  - {tp: 2, pp: 2, micro_batch: 2}
  - {tp: 1, pp: 4, vpp: 3, micro_batch: 1}
EOF
"$strata" compare --model gpt2-124m --cluster dgx-a100 --gpus 16 --top 3 --report "$tmp/r.html"
"$strata" compare --model gpt2-124m --cluster dgx-a100 --gpus 16 --global-batch 64 \
  --strategies "$tmp/strategies.yaml" --gantt all --report "$tmp/p.html"
"$strata" compare --model gpt2-124m --cluster dgx-a100 --gpus 16 --top 3 --format md > "$tmp/r.md"
"$strata" compare --model gpt2-124m --cluster dgx-a100 --gpus 16 --top 3 --format json --report "$tmp/r.json"

# --- the HTML itself ---------------------------------------------------------------
for page in r p; do
  f="$tmp/$page.html"
  n=$(grep -o '<svg ' "$f" | wc -l)
  [ "$n" -ge 3 ] || fail "$page.html: expected >= 3 <svg> charts, got $n"
  grep -q 'Step time breakdown' "$f" || fail "$page.html: no breakdown chart"
  grep -q 'Memory per pipeline stage' "$f" || fail "$page.html: no memory chart"
  grep -q 'class="ev"' "$f" || fail "$page.html: no Gantt bars"
  if grep -qiE '<script|<link|src=|https://' "$f"; then fail "$page.html: scripts or external assets"; fi
done
[ "$(grep -c 'stage 3 · compute' "$tmp/p.html")" -ge 1 ] || fail "p.html: the pp=4 Gantt has no stage 3 row"
[ "$(grep -c '^| [0-9]' "$tmp/r.md")" -eq 3 ] || fail "r.md: expected 3 table rows"

# --- render it ---------------------------------------------------------------------
render() {  # render PAGE PNG
  timeout 120 "$chromium_bin" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$(mktemp -d -p "$tmp")" --screenshot="$2" --window-size=1400,2400 \
    "file://$1" > "$tmp/chromium.log" 2>&1 || { cat "$tmp/chromium.log" >&2; fail "chromium failed on $1"; }
  [ -s "$2" ] || { cat "$tmp/chromium.log" >&2; fail "no screenshot of $1"; }
  size=$(stat -c %s "$2")
  [ "$size" -gt 20000 ] || fail "screenshot of $1 is only $size bytes"
}
render "$tmp/r.html" "$tmp/r.png"
render "$tmp/p.html" "$tmp/p.png"

if ! command -v python3 > /dev/null; then
  echo "note: python3 not found; pixel and XML checks skipped"
  echo "PASS (render + grep only)"
  exit 0
fi

python3 - "$tmp" <<'PY'
import json, re, struct, sys, zlib
import xml.etree.ElementTree as ET

tmp = sys.argv[1]

def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

def read_png(path):
    """(width, height, rows of RGB tuples) for 8-bit RGB/RGBA non-interlaced PNGs."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                fail("unexpected PNG format depth=%d type=%d interlace=%d" % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows

def check_png(path, want):
    w, h, bpp, rows = read_png(path)
    counts = {}
    for y in range(0, h, 2):
        line = rows[y]
        for x in range(0, w * bpp, 2 * bpp):
            px = (line[x], line[x + 1], line[x + 2])
            counts[px] = counts.get(px, 0) + 1
    total = sum(counts.values())
    background = max(counts.values())
    if len(counts) < 16:
        fail("%s: only %d distinct colours (blank page?)" % (path, len(counts)))
    if background > 0.97 * total:
        fail("%s: %.1f%% of the page is one colour" % (path, 100.0 * background / total))
    for name, rgb in want.items():
        near = sum(n for px, n in counts.items() if all(abs(px[i] - rgb[i]) <= 4 for i in range(3)))
        if near < 200:
            fail("%s: colour of %s %s appears in only %d sampled pixels: chart not drawn?" % (path, name, rgb, near))
    print("%s: %dx%d, %d colours, background %.1f%%" % (path, w, h, len(counts), 100.0 * background / total))

check_png(tmp + "/r.png", {"compute/forward": (0x4e, 0x79, 0xa7), "backward": (0x59, 0xa1, 0x4f)})
check_png(tmp + "/p.png", {"compute/forward": (0x4e, 0x79, 0xa7), "backward": (0x59, 0xa1, 0x4f),
                           "bubble": (0xba, 0xb0, 0xac)})

for page in ("r", "p"):
    html = open("%s/%s.html" % (tmp, page), encoding="utf-8").read()
    svgs = re.findall(r"<svg .*?</svg>", html, flags=re.S)
    for i, s in enumerate(svgs):
        try:
            ET.fromstring(s)
        except ET.ParseError as e:
            fail("%s.html: <svg> #%d is not well-formed XML: %s" % (page, i + 1, e))

report = json.load(open(tmp + "/r.json"))
if len(report["strategies"]) != 3:
    fail("r.json: expected 3 strategies")
for s in report["strategies"]:
    for k in ("strategy", "prediction", "fits_memory"):
        if k not in s:
            fail("r.json: strategy without " + k)
print("PASS")
PY
