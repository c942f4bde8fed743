#!/usr/bin/env bash
# Render a `benchsmith report` to PNG with headless Chromium, to look at its layout at 1280 px.
#
#   perf/report_screenshot.sh [RUN_DIR...]
#
# Without RUN_DIR, two fake runs are built first (tests/report_helpers.py: a SLOT split of the first
# PAIRS Chinook pairs, derived T-Eval/GTA/ToolAssess/ACEBench-special cases, a good and a weak fake
# model, scored with benchsmith's scorers). Writes OUT/report/ (the report), OUT/report.png and
# OUT/report-open.png (every <details> opened: failure samples and their turns).
#
# Environment: PYTHON (default: .venv/bin/python, else python3), OUT (default: /tmp/benchsmith-report-shot),
# HEIGHT (window height in px, default 3000; the page is cut there), PAIRS (default 5), CHROMIUM (the browser).
# Chromium: `apt-get install -y chromium` on Debian.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$( [ -x "$ROOT/.venv/bin/python" ] && echo "$ROOT/.venv/bin/python" || command -v python3 )}"
OUT="${OUT:-/tmp/benchsmith-report-shot}"
HEIGHT="${HEIGHT:-3000}"
PAIRS="${PAIRS:-5}"
CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"
if [ -z "$CHROMIUM" ]; then
  echo "no chromium found: apt-get install -y chromium (or set CHROMIUM)" >&2
  exit 1
fi

mkdir -p "$OUT"
if [ "$#" -eq 0 ]; then
  rm -rf "$OUT/fixture"
  "$PYTHON" - "$OUT/fixture" "$PAIRS" "$ROOT/tests" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[3])
from report_helpers import make_two_runs

_, a, b = make_two_runs(Path(sys.argv[1]), int(sys.argv[2]))
print(a, b)
PY
  set -- "$OUT/fixture/runs/model-a" "$OUT/fixture/runs/model-b"
fi

"$PYTHON" -c 'import sys; from benchsmith.cli import app; app(prog_name="benchsmith")' report "$@" --out "$OUT/report"

shot() {  # shot HTML PNG
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="1280,$HEIGHT" \
    --screenshot="$2" "file://$1" >/dev/null 2>&1
  echo "$2"
}
shot "$OUT/report/report.html" "$OUT/report.png"
sed -e 's/<details class="run-failures">/<details class="run-failures" open>/g' -e 's/<details>/<details open>/g' \
  "$OUT/report/report.html" > "$OUT/report/report-open.html"
shot "$OUT/report/report-open.html" "$OUT/report-open.png"
