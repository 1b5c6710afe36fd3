#!/usr/bin/env bash
# The commands of the `reflink` bench job (scripts/bench.sh --jobs reflink),
# run in one folder: on a scratch XFS image (under scripts/with_xfs.sh) and
# on the bench's own disk.
#
#   scripts/bench_reflink.sh ETPACK SIZE DIR [--cp]
#
# Makes (untimed) a demo program of SIZE in DIR in the reflink-friendly
# layout (`repack --align 4096`), then times, each on a cold page cache:
#   repack    to another block-aligned layout (segments 16384-aligned)
#   bundle    --layout segmented --program-alignment 4096 of that
#   unbundle  of the bundle (checked to equal the program)
# and prints one line per command: name, seconds, new disk in bytes (df used
# after minus before, synced), bytes shared, bytes copied (from --json),
# and with --cp the seconds of `cp && sync` of the command's input (run
# first, its copy removed before the command). Without --cp the unbundled
# program is checked to equal the bundled one; with it each input is removed
# once used, so the folder never holds more than 2 × SIZE.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 ETPACK SIZE DIR [--cp]" >&2; exit 2; }
etpack=$1 size=$2 d=$3 with_cp=${4:-}

. "$(dirname "$0")/bench_lib.sh"

"$etpack" demo --size "$size" -o "$d" >/dev/null
"$etpack" repack "$d/demo.pte" -o "$d/a.pte" --align 4096 >/dev/null
rm "$d/demo.pte"
# The demo's method `forward` takes one input: LONG[1, 64] token ids.
printf '{"methods": {"forward": [{"inputs": [{"tensor": {"dtype": "LONG", "sizes": [1, 64], "base64": "%s"}}]}]}}\n' \
  "$(head -c 512 /dev/zero | base64 -w0)" > "$d/cases.json"

# run NAME INPUT CMD...: one line as above.
run() {
  local name=$1 input=$2 u0 u1 t0 t1 json cp_s=""
  shift 2
  if [ "$with_cp" = --cp ]; then
    drop_caches
    local c0 c1
    c0=$(now)
    cp "$input" "$d/copy" && sync "$d/copy"
    c1=$(now)
    rm -f "$d/copy"
    cp_s=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')
  fi
  drop_caches
  u0=$(used "$d")
  t0=$(now)
  json=$("$@" --json 2>/dev/null)
  t1=$(now)
  u1=$(used "$d")
  /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[2])
print(sys.argv[1], "%.3f" % (float(sys.argv[4]) - float(sys.argv[3])), int(sys.argv[6]) - int(sys.argv[5]),
      r["bytes_shared"], r["bytes_copied"], sys.argv[7])' "$name" "$json" "$t0" "$t1" "$u0" "$u1" "$cp_s"
}

run repack "$d/a.pte" "$etpack" repack "$d/a.pte" -o "$d/b.pte" --align 4096 --segment-alignment 16384
rm "$d/a.pte"
run bundle "$d/b.pte" "$etpack" bundle "$d/b.pte" --cases "$d/cases.json" -o "$d/b.bpte" \
  --layout segmented --program-alignment 4096
[ "$with_cp" != --cp ] || rm "$d/b.pte"
run unbundle "$d/b.bpte" "$etpack" unbundle "$d/b.bpte" -o "$d/u.pte"
[ "$with_cp" = --cp ] || cmp "$d/u.pte" "$d/b.pte"
rm -f "$d"/*.pte "$d"/*.bpte "$d/cases.json"
