#!/usr/bin/env bash
# Whole-process benchmark: each etpack job against `cp` of the same bytes,
# on the same disk, in the same run (absolute times drift on shared
# machines; the ratio is the figure to quote). Before every run the page
# cache is dropped (when permitted); wall time and peak RSS come from
# /usr/bin/time -v, page-cache growth from `Cached:` in /proc/meminfo.
#
#   scripts/bench.sh [--jobs "demo pack ptd bundle"] [--sizes "256MiB 1GiB 4GiB 8GiB"]
#                    [--runs 3] [--capped SIZE|none] [--dir DIR] [--out DIR]
#
# Jobs (S = size; inputs are made untimed):
#   demo    etpack demo --size S                       vs  cp of the written .pte
#   pack    etpack pack manifest.json whose constants are file ranges into
#           3 safetensors shards of S in total (scripts/gen_safetensors.py,
#           scripts/gen_manifest.py)                   vs  cp of the shards
#   ptd     etpack ptd index.json of such shards       vs  cp of the shards
#   bundle  etpack bundle demo.pte --cases (one small case) of a demo .pte
#           of S; from 2 GiB on --layout segmented --program-alignment 4096
#                                                      vs  cp of the .pte
#   python  etpack.save_ptd / save_pte of 2 GiB of numpy arrays (not --sizes)
#           vs  ndarray.tofile + fsync, numpy.savez, torch.save
#           (scripts/bench_python.py; its own section of RESULTS.md, which
#           `--jobs python` alone replaces in place)
#   exir    etpack.exir.serialize_pte_binary(...).save() of an LLM-shaped
#           exporter object tree (python/tests/exir_classes.py; not --sizes):
#           50,000 constants of 64 MiB vs dataclasses.asdict + json.dumps of
#           the same tree, and 200 constants of 2 GiB vs cp (bench/exir_bench.py;
#           its own section of RESULTS.md, which `--jobs exir` alone replaces)
#   checksum  etpack ptd --integrity of such shards    vs  etpack ptd of the
#           same shards without a table (not cp: the row's ratio is the
#           table's cost, runs interleaved)
#   fat     etpack pack of a fat delegate (scripts/gen_fat_manifest.py):
#           native program + MLX + Vulkan payloads (8 MiB each), all three
#           sharing S of weights from one file          vs  cp of the weights
#           and payloads (the output must be about that, not 3 × S)
#   compress (not in the default list) for synthetic .ptd files of S of
#           BF16, F16 and int8 weights and of random bytes
#           (build-release/bench/gen_weights): etpack compress vs
#           zstd -T2 -3 (ratio and speed), etpack decompress vs zstd -d
#           (speed, peak RSS), and etpack decompress --tensor of one
#           matrix; both sides fsync their output (`sync FILE`). Its own
#           table in RESULTS.md ("Transport archives"); not plotted.
#   shard   (not in the default list; not --sizes) etpack ptd of a 4 GiB
#           checkpoint (3 safetensors shards, as for `ptd`) with
#           --max-shard-bytes 1GiB vs cp of the checkpoint, runs
#           interleaved; then every .ptd checked to be at most 1 GiB as a
#           file and every tensor compared byte for byte with its source,
#           found through the set (`etpack inspect --json` of the shards),
#           and `etpack verify` of the set; then 50 random SIGKILLs of a
#           sharded write (scripts/bench_shard_kills.sh). Its own section of
#           RESULTS.md, which `--jobs shard` alone replaces in place.
#   plan    (not in the default list; not --sizes) etpack ptd of one
#           safetensors file of 10k, 100k, 300k and 1M distinct 64-byte
#           tensors of one size (scripts/gen_safetensors.py --count): time
#           and peak RSS per tensor. 1M tensors need more FlatBuffers tables
#           than the verifier accepts, so that row is the time to plan and
#           refuse. Then the readers' peak RSS on the 300k-entry .ptd
#           (inspect, inspect --json, verify) and of repack of a 20,000-method
#           program (gen_weights --methods); then etpack.save_ptd of
#           500,000 16-byte entries from Python (bench/save_ptd_many.py)
#           and `etpack verify` of the file it wrote. Its own section of
#           RESULTS.md, which `--jobs plan` alone replaces in place.
#   reflink (not in the default list) at the largest of --sizes: a demo
#           program in the reflink-friendly layout (repack --align 4096),
#           then repack to another block-aligned layout, bundle (segmented,
#           program alignment 4096) and unbundle (scripts/bench_reflink.sh):
#           on a scratch XFS image (scripts/with_xfs.sh --size 3 × S) time,
#           new disk (df) and bytes shared; on DIR the same commands vs
#           `cp && sync` of their inputs. Its own section of RESULTS.md,
#           which `--jobs reflink` alone replaces in place.
#   update  (not in the default list; not --sizes) etpack update of a 4 GiB
#           .ptd changing every tenth tensor, on a reflink XFS image
#           (scripts/with_xfs.sh --size 12G) and in DIR: time against the
#           full write, bytes rewritten, extra disk (df); where nothing is
#           shared, against cp; then 50 random SIGKILLs of update on each
#           (scripts/bench_update.sh). Its own section of RESULTS.md.
#   share   (not in the default list) 5 LLM-shaped variants of the largest
#           of --sizes each, holding the same weights and a 4 MiB constant
#           of their own (scripts/gen_family.py), block-aligned: `etpack
#           share` of all five vs `cp -r && sync` of what it wrote (--runs
#           times, interleaved), its peak RSS, output against one variant,
#           then verify and the way back (`repack --data`) of every variant
#           compared with its original; once more on a reflink XFS image
#           (new disk). scripts/bench_share.sh. Its own section of
#           RESULTS.md, which `--jobs share` alone replaces in place.
#   sharemany (not in the default list) share of 100, 200 and 400 small
#           programs into a fresh and into an existing OUTDIR
#           (scripts/bench_share_many.sh; issue 37 item 4: existing within
#           2x of fresh, linear in the count). Prints its RUN lines.
#
# --against REV (alone, no other job): REV (a commit of this repository) is
# checked out beside the tree and built the same way, then the default jobs
# at the largest of --sizes and exir (a) run with both builds interleaved,
# --runs times (scripts/bench_against.py); its own section of RESULTS.md.
#
# Both sides make the data durable: etpack syncs before its rename, so cp
# is timed as `cp && sync`. Outputs are removed before every run and a
# job's inputs before the next job, so a job needs 3 × S free in DIR
# (checked before each job; default DIR: $TMPDIR or /tmp; the script works
# in a fresh DIR/etpack-bench-XXXXXX of its own, made by mktemp -d, and
# removes it at exit).
#
# --capped SIZE (default: the largest of --sizes; `none` skips it) also
# runs each job once at SIZE as `prlimit --as=1GiB etpack ...` (the limit
# covers all virtual memory, mmap windows included) and records whether
# it succeeded.
#
# Then runs the in-process Google Benchmarks (bench/bench_main.cc): those
# matching --gbench REGEX (default all), none with --gbench none.
# Writes OUT/RESULTS.md, OUT/results.tsv and the plot OUT/results.png
# (gnuplot; throughput and peak RSS against size). Default OUT: bench.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench_lib.sh

jobs="demo pack ptd bundle"
sizes="256MiB 1GiB 4GiB 8GiB"
runs=3
capped=""
cap_as=$((1 << 30))
dir="${TMPDIR:-/tmp}"
out=bench
gbench_filter=.
usage="usage: $0 [--jobs LIST] [--sizes LIST] [--runs N] [--capped SIZE|none] [--dir DIR] [--out DIR] [--gbench REGEX|none] [--against REV]"
against=""
while (($#)); do
  case "$1" in --*) (($# >= 2)) || { echo "$usage" >&2; exit 2; } ;; esac
  case "$1" in
    --jobs) jobs="$2" ;;
    --sizes) sizes="$2" ;;
    --runs) runs="$2" ;;
    --capped) capped="$2" ;;
    --dir) dir="$2" ;;
    --out) out="$2" ;;
    --gbench) gbench_filter="$2" ;;
    --against) against="$2" jobs="" ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift 2
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench: --runs $runs is not a positive integer" >&2; exit 2; }
for job in $jobs; do
  case "$job" in demo | pack | ptd | bundle | python | exir | checksum | fat | compress | plan | shard | reflink | update | share | sharemany) ;;
    *) echo "bench: unknown job '$job' (jobs: demo pack ptd bundle python exir checksum fat compress plan shard reflink update share sharemany)" >&2; exit 2 ;;
  esac
done

# Sizes are read as scripts/gen_safetensors.py reads them (KiB, MiB, GiB...).
to_bytes() {
  python3 -c 'import sys; sys.path.insert(0, "scripts"); import gen_safetensors as g
try: print(g.parse_size(sys.argv[1]))
except Exception as e: sys.exit(f"bench: {e}")' "$1"
}
largest="" largest_bytes=0
for size in $sizes; do
  b=$(to_bytes "$size")
  if ((b > largest_bytes)); then largest="$size" largest_bytes=$b; fi
done
[ -n "$largest" ] || { echo "bench: --sizes is empty" >&2; exit 2; }
[ -n "$capped" ] || capped="$largest"
[ "$capped" = none ] || to_bytes "$capped" >/dev/null

extra=""
command -v gnuplot >/dev/null || extra="gnuplot-nox"
SETUP_EXTRA_PACKAGES="$extra" scripts/setup.sh build-release >/dev/null
meson configure build-release -Dbuildtype=release >/dev/null
ninja -C build-release apps/etpack bench/etpack_bench bench/gen_weights >/dev/null
etpack="$PWD/build-release/apps/etpack"
python_section=""
exir_section=""
if [[ -n "$against" || " $jobs " == *" python "* || " $jobs " == *" exir "* || " $jobs " == *" plan "* ]]; then
  ninja -C build-release python/etpack/_etpack$(/usr/bin/python3 -c \
    'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') >/dev/null
fi

# A fresh directory per run: two runs at once never share (or remove) each
# other's files.
work=$(mktemp -d "$dir/etpack-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# need_space WHAT SIZE: fails unless DIR has 3 × SIZE free (input, output, copy).
need_space() {
  local need avail
  need=$((3 * $(to_bytes "$2")))
  avail=$(df -B1 --output=avail "$work" | tail -1)
  if ((avail < need)); then
    echo "bench: $work has $((avail >> 20)) MiB free, but $1 at $2 needs 3 × $2 = $((need >> 20)) MiB (input, output and copy); free some space or pass --dir" >&2
    exit 1
  fi
}
need_space "the largest job" "$largest"

cached_kib() { awk '/^Cached:/ {print $2}' /proc/meminfo; }

# measure CMD... : runs CMD once on a cold page cache and sets wall (s),
# rss (peak, KiB), cache (growth of Cached:, KiB) and status ("0",
# "exit N" or "signal N"). CMD's stderr is left in $work/stderr.
measure() {
  local before after rc=0
  drop_caches
  before=$(cached_kib)
  /usr/bin/time -v -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || rc=$?
  after=$(cached_kib)
  cache=$((after - before))
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$work/time")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
  status=0
  if grep -q "terminated by signal" "$work/time"; then
    status="signal $(awk '/terminated by signal/ {print $NF; exit}' "$work/time")"
  elif ((rc)); then
    status="exit $rc"
  fi
}
must_succeed() {
  [ "$status" = 0 ] && return
  cat "$work/stderr" >&2
  echo "bench: $* failed ($status)" >&2
  exit 1
}

# make_JOB SIZE: writes the job's input to $w (untimed) and sets
#   ecmd  the etpack command line    eout  the file it writes
#   src   the files cp copies        note  remarks for the table
make_demo() {
  ecmd=("$etpack" demo --size "$1" -o "$w")
  eout="$w/demo.pte"
  src=("$w/demo.pte")   # written by the etpack run that precedes each cp
  note=""
}
make_shards() {
  python3 scripts/gen_safetensors.py "$w/ckpt" --size "$1" --shards 3 >/dev/null
  src=("$w"/ckpt/*.safetensors)
}
make_pack() {
  make_shards "$1"
  local n
  n=$(python3 scripts/gen_manifest.py "$w/ckpt" -o "$w/manifest.json" | sed -E 's/.*: ([0-9]+) constants.*/\1/')
  ecmd=("$etpack" pack "$w/manifest.json" -o "$w/out.pte")
  eout="$w/out.pte"
  note="$n constants = file ranges of 3 shards"
}
make_ptd() {
  make_shards "$1"
  ecmd=("$etpack" ptd "$w/ckpt/model.safetensors.index.json" -o "$w/out.ptd")
  eout="$w/out.ptd"
  note="3 shards"
}
make_checksum() {
  make_ptd "$1"
  ecmd+=(--integrity)
  # The baseline is the same command without the table, its output where
  # cp's copy would go (removed before every run).
  bcmd=(sh -c 'mkdir -p "$0" && exec "$@" >/dev/null' "$work/copy" "${ecmd[@]:0:3}" -o "$work/copy/plain.ptd")
  note="baseline: etpack ptd without --integrity (ratio = cost of the table)"
}
make_bundle() {
  "$etpack" demo --size "$1" -o "$w" >/dev/null
  # The demo's method `forward` takes one input: LONG[1, 64] token ids.
  printf '{"methods": {"forward": [{"inputs": [{"tensor": {"dtype": "LONG", "sizes": [1, 64], "base64": "%s"}}]}]}}\n' \
    "$(head -c 512 /dev/zero | base64 -w0)" > "$w/cases.json"
  ecmd=("$etpack" bundle "$w/demo.pte" --cases "$w/cases.json" -o "$w/out.bpte")
  eout="$w/out.bpte"
  src=("$w/demo.pte")
  # The standard layout is one flatbuffer, limited to 2 GiB.
  if (($(stat -c %s "$w/demo.pte") < (1 << 31) - (16 << 20))); then
    note="standard layout"
  else
    ecmd+=(--layout segmented --program-alignment 4096)
    note="segmented layout, program alignment 4096"
  fi
}

make_fat() {
  head -c "$(to_bytes "$1")" /dev/urandom > "$w/weights.bin"
  head -c $((8 << 20)) /dev/urandom > "$w/mlx.bin"
  head -c $((8 << 20)) /dev/urandom > "$w/vulkan.bin"
  python3 scripts/gen_fat_manifest.py "$w/weights.bin" "$w/mlx.bin" "$w/vulkan.bin" -o "$w/fat.json"
  ecmd=("$etpack" pack "$w/fat.json" -o "$w/out.pte")
  eout="$w/out.pte"
  src=("$w/weights.bin" "$w/mlx.bin" "$w/vulkan.bin")
  note="3 lowerings share the weights; output = cp bytes + 1 program (checked after each run)"
}

# compress_job SIZE: the `compress` job (see the top), one row per dtype in
# zrows. Each archive is checked to restore the file, through both tools.
zrows=()
compress_job() {
  local size=$1 bytes dt f r t n ew=() zw=() dw=() dr=() zdw=() tw=() tr=() es zs ts
  bytes=$(to_bytes "$size")
  for dt in bf16 f16 int8 random; do
    f="$w/$dt.ptd"
    n=$(build-release/bench/gen_weights "$f" --dtype "$dt" --size "$bytes" | sed -E 's/.*: ([0-9]+) layers.*/\1/')
    t="layers.$((n / 2)).wq"
    ew=() zw=() dw=() dr=() zdw=() tw=() tr=()
    for ((r = 1; r <= runs; r++)); do
      rm -f "$w"/*.zst "$w"/*.out
      measure sh -c '"$0" compress "$1" -o "$2" && sync "$2"' "$etpack" "$f" "$w/e.zst"
      must_succeed "etpack compress $dt"; ew+=("$wall")
      measure sh -c 'zstd -q -T2 -3 "$1" -o "$2" && sync "$2"' zstd "$f" "$w/z.zst"
      must_succeed "zstd -T2 -3 $dt"; zw+=("$wall")
      measure "$etpack" decompress "$w/e.zst" -o "$w/e.out"
      must_succeed "etpack decompress $dt"; dw+=("$wall") dr+=("$rss")
      cmp -s "$f" "$w/e.out" || { echo "bench: etpack decompress of $dt differs" >&2; exit 1; }
      rm -f "$w/e.out"
      measure sh -c 'zstd -q -d "$1" -o "$2" && sync "$2"' zstd "$w/z.zst" "$w/z.out"
      must_succeed "zstd -d $dt"; zdw+=("$wall")
      rm -f "$w/z.out"
      measure "$etpack" decompress "$w/e.zst" --tensor "$t" -o "$w/t.out"
      must_succeed "etpack decompress --tensor $dt"; tw+=("$wall") tr+=("$rss")
      echo "   compress $dt $size run $r: etpack ${ew[-1]} s | zstd ${zw[-1]} s | decompress ${dw[-1]} s, ${dr[-1]} KiB | tensor ${tw[-1]} s" >&2
    done
    zstd -q -d "$w/e.zst" -o "$w/z.out" && cmp -s "$f" "$w/z.out" ||
      { echo "bench: zstd -d of etpack's $dt archive differs" >&2; exit 1; }
    es=$(stat -c %s "$w/e.zst") zs=$(stat -c %s "$w/z.zst") ts=$(stat -c %s "$w/t.out")
    bytes=$(stat -c %s "$f")
    zrows+=("$(awk -v dt="$dt" -v s="$size" -v b="$bytes" -v es="$es" -v zs="$zs" -v ts="$ts" \
      -v ew="$(printf '%s\n' "${ew[@]}" | median)" -v zw="$(printf '%s\n' "${zw[@]}" | median)" \
      -v dw="$(printf '%s\n' "${dw[@]}" | median)" -v zdw="$(printf '%s\n' "${zdw[@]}" | median)" \
      -v dr="$(printf '%s\n' "${dr[@]}" | maxof)" -v tw="$(printf '%s\n' "${tw[@]}" | median)" \
      -v tr="$(printf '%s\n' "${tr[@]}" | maxof)" 'BEGIN { mib = b / 1048576;
      printf "| %s | %s | %.2f (%.0f MiB/s) | %.2f (%.0f MiB/s) | **%.2f×** | %.2f%% | %.2f%% | %+.2f%% | %.2f | %.2f | %.1f | %.3f (%.0f MiB) | %.1f |",
        dt, s, ew, mib / ew, zw, mib / zw, zw / ew, 100 * es / b, 100 * zs / b, 100 * (es - zs) / zs,
        dw, zdw, dr / 1024, tw, ts / 1048576, tr / 1024 }')")
    rm -f "$f" "$w"/*.zst "$w"/*.out
  done
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%s–%s", lo, hi}'; }
maxof() { sort -g | tail -1; }

# The fat output holds the shared weights once: at most the copied bytes
# plus 1 MiB of program, headers and padding.
fat_check() {
  local in outb
  in=$(stat -c %s "${src[@]}" | awk '{s += $1} END {print s}')
  outb=$(stat -c %s "$eout")
  echo "   fat: output $outb bytes for $in bytes of inputs" >&2
  if ((outb > in + (1 << 20))); then
    echo "bench: fat output $outb bytes is more than inputs $in + 1 MiB: weights stored twice?" >&2
    exit 1
  fi
}

rows=() data=() caprows=()
# pair JOB SIZE: $runs × (etpack, then cp of the same bytes), each with its
# output removed and the cache dropped first; adds a row to rows and data.
pair() {
  local job=$1 size=$2 r bytes ew=() er=() ec=() cw=() cr=()
  local ccmd=(sh -c 'mkdir -p "$0" && cp "$@" "$0/" && sync' "$work/copy" "${src[@]}")
  if ((${#bcmd[@]})); then ccmd=("${bcmd[@]}"); fi
  for ((r = 1; r <= runs; r++)); do
    rm -rf "$eout" "$work/copy"
    measure "${ecmd[@]}"; must_succeed "${ecmd[*]}"
    ew+=("$wall") er+=("$rss") ec+=("$cache")
    if [ "$job" = fat ]; then fat_check; fi
    measure "${ccmd[@]}"; must_succeed "cp for $job"
    cw+=("$wall") cr+=("$rss")
    echo "   $job $size run $r: etpack ${ew[-1]} s, ${er[-1]} KiB | cp ${cw[-1]} s" >&2
  done
  bytes=$(stat -c %s "${src[@]}" | awk '{s += $1} END {print s}')
  local v=(-v job="$job" -v s="$size" -v smib="$(($(to_bytes "$size") >> 20))" -v b="$bytes"
    -v ew="$(printf '%s\n' "${ew[@]}" | median)" -v cw="$(printf '%s\n' "${cw[@]}" | median)"
    -v erng="$(printf '%s\n' "${ew[@]}" | range)" -v crng="$(printf '%s\n' "${cw[@]}" | range)"
    -v er="$(printf '%s\n' "${er[@]}" | maxof)" -v cr="$(printf '%s\n' "${cr[@]}" | maxof)"
    -v ec="$(printf '%s\n' "${ec[@]}" | median)" -v note="$note")
  rows+=("$(awk "${v[@]}" 'BEGIN { mib = b / 1048576;
    printf "| %s | %s | %.2f (%s) | %.0f | %.2f (%s) | %.0f | **%.2f×** | %.1f | %.1f | %.0f | %s |",
      job, s, ew, erng, mib / ew, cw, crng, mib / cw, cw / ew, er / 1024, cr / 1024, ec / 1024, note }')")
  data+=("$(awk "${v[@]}" 'BEGIN { mib = b / 1048576;
    printf "%s\t%s\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.0f\t%.1f\t%.1f\t%.0f",
      job, s, smib, b, ew, mib / ew, cw, mib / cw, er / 1024, cr / 1024, ec / 1024 }')")
}

# capped JOB SIZE: one etpack run with its address space capped.
capped_run() {
  local job=$1 size=$2 result=succeeded err=""
  rm -rf "$eout"
  measure prlimit --as="$cap_as" "${ecmd[@]}"
  echo "   $job $size capped: $status, $wall s, $rss KiB" >&2
  if [ "$status" != 0 ]; then
    result="**failed** ($status)"
    err=$(grep -v '^[[:space:]]*$' "$work/stderr" | tail -1 | tr '|`' '/\047' | cut -c1-200 || true)
  fi
  caprows+=("$(awk -v job="$job" -v s="$size" -v res="$result" -v w="$wall" -v r="$rss" -v e="$err" \
    'BEGIN { printf "| %s | %s | %s | %.2f | %.1f | %s |", job, s, res, w, r / 1024, e }')")
}

# splice_section HEADING TEXT: replaces the section of $out/RESULTS.md that
# starts with "## HEADING" by TEXT (or adds TEXT before the in-process
# section), for jobs that run alone and keep the rest of the file.
splice_section() {
  touch "$out/RESULTS.md"
  SECTION="$2" HEADING="$1" /usr/bin/python3 - "$out/RESULTS.md" <<'EOF'
import os, re, sys
path = sys.argv[1]
heading = re.escape(os.environ["HEADING"])
text = re.sub(r"## " + heading + r".*?(?=^## |\Z)", "", open(path).read(), flags=re.S | re.M)
section = os.environ["SECTION"].strip() + "\n\n"
at = text.find("## In-process")
text = text[:at] + section + text[at:] if at >= 0 else text.rstrip() + "\n\n" + section
open(path, "w").write(text)
EOF
}

# plan_job: the `plan` job (see the top); sets plan_section.
plan_section=""
plan_job() {
  local w="$work/plan" n prow=() rrow=() largest="" size entries c result
  mkdir -p "$w"
  for n in 10000 100000 300000 1000000; do
    python3 scripts/gen_safetensors.py "$w/s$n" --count "$n" >/dev/null
    measure nice "$etpack" ptd "$w/s$n/model.safetensors" -o "$w/s$n.ptd"
    result=written
    if [ "$status" != 0 ]; then
      result="refused: $(grep -v '^[[:space:]]*$' "$work/stderr" | tail -1 | sed 's/^etpack: [^:]*: //' | cut -c1-120)"
    else
      largest="$w/s$n.ptd"
    fi
    echo "   plan $n tensors: $wall s, $rss KiB, $result" >&2
    prow+=("$(awk -v n="$n" -v w="$wall" -v r="$rss" -v res="$result" 'BEGIN {
      printf "| %d | %.2f | %.1f | %.1f | %.0f | %s |", n, w, 1e6 * w / n, r / 1024, 1024 * r / n, res }')")
    rm -rf "$w/s$n"
  done
  size=$(stat -c %s "$largest")
  entries=$("$etpack" inspect --json "$largest" | grep -c '"key"' || true)
  for c in "inspect" "inspect --json" "verify"; do
    # shellcheck disable=SC2086
    measure nice "$etpack" $c "$largest"; must_succeed "etpack $c"
    echo "   $c of $entries entries: $wall s, $rss KiB" >&2
    rrow+=("$(awk -v c="$c" -v e="$entries" -v s="$size" -v w="$wall" -v r="$rss" 'BEGIN {
      printf "| `etpack %s` | .ptd, %d entries | %.1f | %.2f | %.1f |", c, e, s / 1048576, w, r / 1024 }')")
  done
  build-release/bench/gen_weights "$w/m.pte" --methods 20000 >/dev/null
  size=$(stat -c %s "$w/m.pte")
  measure nice "$etpack" repack "$w/m.pte" -o "$w/r.pte"; must_succeed "etpack repack"
  echo "   repack of 20000 methods: $wall s, $rss KiB" >&2
  rrow+=("$(awk -v s="$size" -v w="$wall" -v r="$rss" 'BEGIN {
    printf "| `etpack repack` | .pte, 20000 methods | %.1f | %.2f | %.1f |", s / 1048576, w, r / 1024 }')")
  # Python: etpack.save_ptd of 500,000 tiny entries (bench/save_ptd_many.py)
  # against `etpack verify` of the file it wrote (issue 30).
  measure nice /usr/bin/python3 bench/save_ptd_many.py --module-dir build-release/python \
    500000 "$w/py.ptd"
  must_succeed "save_ptd of 500000 entries"
  local inputs_kib
  inputs_kib=$(awk '/^before_save_kib/ {print $2}' "$work/stderr")
  echo "   save_ptd of 500000 entries: $wall s, $rss KiB ($inputs_kib KiB before the call)" >&2
  size=$(stat -c %s "$w/py.ptd")
  rrow+=("$(awk -v s="$size" -v w="$wall" -v r="$rss" -v i="$inputs_kib" 'BEGIN {
    printf "| `etpack.save_ptd` (Python; %.1f MiB before the call) | 500000 16-byte entries | %.1f | %.2f | %.1f |", i / 1024, s / 1048576, w, r / 1024 }')")
  measure nice "$etpack" verify "$w/py.ptd"; must_succeed "etpack verify"
  rrow+=("$(awk -v s="$size" -v w="$wall" -v r="$rss" 'BEGIN {
    printf "| `etpack verify` of that file | .ptd, 500000 entries | %.1f | %.2f | %.1f |", s / 1048576, w, r / 1024 }')")
  rm -rf "$w"
  plan_section=$(
    echo "## Planning many tensors (\`plan\` job)"
    echo
    echo "Made by \`scripts/bench.sh --jobs plan\` on $(date -u +%Y-%m-%d) ($(nproc) cores, load"
    echo "average $(cut -d' ' -f1 /proc/loadavg) at the end). \`etpack ptd\` of one safetensors file of N"
    echo "distinct 64-byte tensors of one size (every tensor meets every other's size"
    echo "in deduplication), page cache dropped first, under \`nice\`; wall time"
    echo "includes reading the header and writing the file."
    echo
    echo "| tensors | s | µs per tensor | peak RSS MiB | peak RSS bytes per tensor | result |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${prow[@]}"
    echo
    echo "Readers on the largest file written and on a program of many methods; Python's"
    echo "save_ptd of 500,000 tiny entries against verify of the file it wrote:"
    echo
    echo "| command | input | file MiB | s | peak RSS MiB |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rrow[@]}"
  )
}

# shard_job: the `shard` job (see the top); sets shard_section.
shard_section=""
shard_job() {
  local w="$work/shard" cap=$((1 << 30)) r bytes ew=() cw=() rss_max=0 n verify_line
  need_space "the shard job" 4GiB
  mkdir -p "$w"
  python3 scripts/gen_safetensors.py "$w/ckpt" --size 4GiB --shards 3 >/dev/null
  bytes=$(cat "$w"/ckpt/*.safetensors | wc -c)
  for ((r = 1; r <= runs; r++)); do
    rm -rf "$w/out" "$work/copy"
    mkdir -p "$w/out"
    measure nice "$etpack" ptd "$w/ckpt/model.safetensors.index.json" -o "$w/out/model.ptd" \
      --max-shard-bytes 1GiB
    must_succeed "etpack ptd --max-shard-bytes"
    ew+=("$wall")
    rss_max=$((rss > rss_max ? rss : rss_max))
    measure nice sh -c 'mkdir -p "$0" && cp "$@" "$0/" && sync' "$work/copy" "$w"/ckpt/*.safetensors
    must_succeed "cp"
    cw+=("$wall")
    echo "   run $r: etpack ${ew[-1]} s (peak RSS $rss_max KiB max so far), cp ${cw[-1]} s" >&2
  done
  rm -rf "$work/copy"
  n=$(find "$w/out" -name 'model-*.ptd' | wc -l)
  # Every shard within the cap as a file; every tensor of the checkpoint
  # found in exactly one shard with its bytes intact.
  "$etpack" inspect --json "$w"/out/model-*.ptd > "$w/set.json"
  /usr/bin/python3 - "$w/ckpt" "$w/set.json" "$cap" <<'EOF2' >&2 || { echo "bench: shard check failed" >&2; exit 1; }
import glob, json, os, struct, sys
ckpt, set_json, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
where = {}
for f in json.load(open(set_json)):
    assert f["file_size"] <= cap and os.path.getsize(f["file"]) <= cap, f["file"]
    for e in f["entries"]:
        seg = f["segments"][e["segment"]]
        assert e["key"] not in where, "key in two shards: " + e["key"]
        where[e["key"]] = (f["file"], seg["absolute_offset"], e["size"])
count = 0
for st in sorted(glob.glob(os.path.join(ckpt, "*.safetensors"))):
    with open(st, "rb") as src:
        n = struct.unpack("<Q", src.read(8))[0]
        header = json.loads(src.read(n))
        base = 8 + n
        for key, t in header.items():
            if key == "__metadata__":
                continue
            begin, end = t["data_offsets"]
            path, offset, size = where.pop(key)
            assert size == end - begin, key
            with open(path, "rb") as dst:
                src.seek(base + begin)
                dst.seek(offset)
                left = size
                while left:
                    k = min(left, 8 << 20)
                    assert src.read(k) == dst.read(k), "bytes differ: " + key
                    left -= k
            count += 1
assert not where, "keys in no source: %s" % sorted(where)[:3]
print(f"   shard check: {count} tensors intact through the set, every .ptd <= {cap} bytes")
EOF2
  verify_line=$("$etpack" verify "$w"/out/model-*.ptd | tail -1)
  echo "   $verify_line" >&2
  local sizes_list kill_row
  sizes_list=$(stat -c %s "$w"/out/model-*.ptd | sort -n | awk '{printf "%s%.1f", (NR > 1 ? ", " : ""), $1 / 1048576}')
  kill_row=$(scripts/bench_shard_kills.sh "$etpack" "$work" 50) ||
    { echo "bench: the shard kill loop left a partial set or a stray file" >&2; exit 1; }
  shard_section=$(
    echo "## Sharded .ptd (\`shard\` job)"
    echo
    echo "Made by \`scripts/bench.sh --jobs shard\` on $(date -u +%Y-%m-%d) ($(nproc) cores, load"
    echo "average $(cut -d' ' -f1 /proc/loadavg) at the end). \`etpack ptd model.safetensors.index.json"
    echo "-o model.ptd --max-shard-bytes 1GiB\` of a $((bytes >> 20)) MiB checkpoint (3 safetensors"
    echo "shards) vs \`cp\` of the checkpoint + \`sync\`, page cache dropped before each, both"
    echo "under \`nice\`, $runs runs interleaved (median)."
    echo
    echo "| runs (etpack s) | runs (cp s) | median etpack s | median cp s | throughput vs cp | peak RSS MiB | shards | shard MiB |"
    echo "|---|---|---|---|---|---|---|---|"
    awk -v e="${ew[*]}" -v c="${cw[*]}" -v r="$rss_max" -v n="$n" -v s="$sizes_list" 'function med(t,  a, k, i, j, x) {
        k = split(t, a, " ")
        for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
      BEGIN { me = med(e); mc = med(c)
        printf "| %s | %s | %.2f | %.2f | %.2fx | %.1f | %d | %s |\n", e, c, me, mc, mc / me, r / 1024, n, s }'
    echo
    echo "Checked after the runs: every shard at most 1 GiB as a file; every tensor of the"
    echo "checkpoint read back through the set (\`etpack inspect --json\` of the shards) equal"
    echo "byte for byte to its source; \`etpack verify\` of the set: \`${verify_line#"$w/out/"}\`."
    echo
    echo "Kill loop (scripts/bench_shard_kills.sh): a 256 MiB checkpoint written as shards of at"
    echo "most 96 MiB into an empty directory, SIGKILL after a random pause of up to one run's time:"
    echo
    echo "| runs | shards a set | killed | left nothing | left the whole set | bad |"
    echo "|---|---|---|---|---|---|"
    echo "$kill_row"
  )
  rm -rf "$w"
}

if [[ " $jobs " == *" shard "* ]]; then
  echo "== shard ($(date +%T))" >&2
  shard_job
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx shard || true; } | tr '\n' ' ' | xargs)
fi

# reflink_job SIZE: the `reflink` job (see the top); sets reflink_section.
reflink_section=""
reflink_job() {
  local size=$1 w="$work/reflink" xfs ext4 image_size
  mkdir -p "$w"
  image_size=$((3 * $(to_bytes "$size")))
  xfs=$(ETPACK_XFS_IMAGE_DIR="$work" scripts/with_xfs.sh --size "$image_size" \
    sh -c 'if [ -z "${ETPACK_XFS_DIR:-}" ]; then echo "skipped $ETPACK_XFS_SKIP"; else exec "$@" "$ETPACK_XFS_DIR"; fi' \
    sh nice scripts/bench_reflink.sh "$etpack" "$size")
  echo "$xfs" | sed 's/^/   xfs: /' >&2
  # The disk part holds 2 × its size at once; on a disk shared with other
  # runs it is halved until that fits with 2 GiB to spare.
  local disk_size avail
  disk_size=$(to_bytes "$size")
  avail=$(df -B1 --output=avail "$work" | tail -1)
  while ((2 * disk_size + (2 << 30) > avail && disk_size > (256 << 20))); do
    disk_size=$((disk_size / 2))
  done
  ext4=$(nice scripts/bench_reflink.sh "$etpack" "$((disk_size >> 20))MiB" "$w" --cp)
  echo "$ext4" | sed 's/^/   disk: /' >&2
  rm -rf "$w"
  local fs
  fs=$(df -T "$work" | awk 'NR == 2 {print $2}')
  reflink_section=$(
    echo "## Shared extents (\`reflink\` job)"
    echo
    echo "Made by \`scripts/bench.sh --jobs reflink --sizes $size\` on $(date -u +%Y-%m-%d) ($(nproc) cores,"
    echo "load average $(cut -d' ' -f1 /proc/loadavg) at the end), under \`nice\`. A demo program of $size"
    echo "in the reflink-friendly layout (\`repack --align 4096\`, untimed), then \`repack --align 4096"
    echo "--segment-alignment 16384\` of it, \`bundle --layout segmented --program-alignment 4096\` of"
    echo "that and \`unbundle\` of the bundle (scripts/bench_reflink.sh), each on a cold page cache;"
    echo "new disk = \`df\` used after minus before (synced); shared and copied from \`--json\`."
    echo
    echo "On a scratch XFS image (\`mkfs.xfs -m reflink=1\`, loop-mounted; scripts/with_xfs.sh):"
    echo
    if [[ "$xfs" == skipped* ]]; then
      echo "not run: ${xfs#skipped }"
    else
      echo "| command | s | new disk MiB | bytes shared | bytes copied |"
      echo "|---|---|---|---|---|"
      awk '{ printf "| %s | %.3f | %.1f | %s | %s |\n", $1, $2, $3 / 1048576, $4, $5 }' <<<"$xfs"
    fi
    echo
    echo "On the bench disk ($fs), the same commands for a program of $((disk_size >> 20)) MiB against \`cp && sync\`"
    echo "of each command's input (cp first, then the command, each on a cold cache):"
    echo
    echo "| command | s | cp s | speed vs cp | bytes shared |"
    echo "|---|---|---|---|---|"
    awk '{ printf "| %s | %.2f | %.2f | %.2fx | %s |\n", $1, $2, $6, $6 / $2, $4 }' <<<"$ext4"
  )
}

if [[ " $jobs " == *" reflink "* ]]; then
  echo "== reflink $largest ($(date +%T))" >&2
  need_space "the reflink job" "$largest"
  reflink_job "$largest"
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx reflink || true; } | tr '\n' ' ' | xargs)
fi

# update_job: the `update` job (see the top); sets update_section.
update_section=""
update_job() {
  local xfs ext4 rows kills
  xfs=$(scripts/with_xfs.sh --size 12G bash -c \
    'scripts/bench_update.sh "$0" "${ETPACK_XFS_DIR:?no scratch XFS: $ETPACK_XFS_SKIP}" 4GiB 50' \
    "$etpack")
  ext4=$(scripts/bench_update.sh "$etpack" "$work" 4GiB 50)
  rows=$(printf '%s\n%s\n' "$xfs" "$ext4")
  kills=$(grep '^KILLS' <<<"$rows" | sed 's/^KILLS //')
  update_section=$(
    echo "## In-place update (\`update\` job)"
    echo
    echo "Made by \`scripts/bench.sh --jobs update\` on $(date -u +%Y-%m-%d) ($(nproc) cores, load"
    echo "average $(cut -d' ' -f1 /proc/loadavg) at the end; other builds were running). A 4 GiB"
    echo "checkpoint (scripts/gen_safetensors.py) is written as a .ptd with \`etpack ptd --align"
    echo "4096\` (the full rewrite, timed), then \`etpack update --from\` a safetensors file"
    echo "holding every tenth tensor with other bytes (scripts/bench_update.sh), page cache"
    echo "dropped before each, under \`nice\`. XFS: a loop-mounted reflink image"
    echo "(scripts/with_xfs.sh --size 12G); extra disk = \`df\` used after minus before"
    echo "(synced), on XFS with the old version kept by a reflink copy (else its replaced"
    echo "blocks are freed and the difference is about zero). On ext4 (/tmp) the disk is"
    echo "shared with other work, so that column says little there."
    echo
    echo "| file system | GiB | tensors changed | MiB rewritten | MiB written | cloned | update s | full write s | speed-up | extra disk MiB |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    grep -v '^KILLS' <<<"$rows" | grep -v 'whole-file copy' || true
    echo
    echo "Where no extents can be shared the update copies the whole file (the"
    echo "unchanged ranges through copy_file_range); against \`cp\` of the same file,"
    echo "both cold, both synced:"
    echo
    echo "| file system | GiB | update | cp | update vs cp |"
    echo "|---|---|---|---|---|"
    grep 'whole-file copy' <<<"$rows" || true
    echo
    echo "Kill loop: SIGKILL at a random moment of each of N runs of \`etpack update\` on a"
    echo "256 MiB .ptd with an integrity table (old and new weights alternating); after"
    echo "each the file must be byte for byte the old or the new one, with no other file"
    echo "in its directory, and \`verify\` must pass at the end."
    echo
    echo "| file system | runs | killed | completed | bad |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "$kills"
  )
}

if [[ " $jobs " == *" update "* ]]; then
  echo "== update ($(date +%T))" >&2
  update_job
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx update || true; } | tr '\n' ' ' | xargs)
fi

# share_job SIZE: the `share` job (see the top); sets share_section.
share_section=""
share_job() {
  local size=$1 disk xfs xfs_reflinked image_size table
  disk=$(nice scripts/bench_share.sh "$etpack" "$size" "$work/share" "$runs")
  echo "$disk" | sed 's/^/   disk: /' >&2
  image_size=$((8 * $(to_bytes "$size")))
  # On XFS twice: variants packed each from the checkpoint (no two share a
  # block), and variants made by reflink copy + update (sharing theirs).
  xfs_run() {
    ETPACK_XFS_IMAGE_DIR="$work" scripts/with_xfs.sh --size "$image_size" \
      sh -c 'if [ -z "${ETPACK_XFS_DIR:-}" ]; then echo "skipped $ETPACK_XFS_SKIP"; else exec "$@" "$ETPACK_XFS_DIR" 1 5 '"$1"'; fi' \
      sh nice scripts/bench_share.sh "$etpack" "$size"
  }
  xfs=$(xfs_run pack)
  echo "$xfs" | sed 's/^/   xfs: /' >&2
  xfs_reflinked=$(xfs_run reflink)
  echo "$xfs_reflinked" | sed 's/^/   xfs (reflinked variants): /' >&2
  rm -rf "$work/share"
  # RUN share_s cp_s rss_kib out_bytes variant_bytes inputs_bytes new_disk_bytes cat_s warm_s
  table() {
    grep -v '^ROUNDTRIP' <<<"$1" | awk -v fs="$2" '{
      printf "| %s | %s | %.2f | %.2f | %.2fx | %.2f | %.2fx | %.2f | %.1f | %.1f | %.1f | %.3fx | %.1f |\n",
        fs, $1, $2, $3, $3 / $2, $9, $9 / $2, $10, $4 / 1024, $7 / 1048576, $5 / 1048576, $5 / $6,
        $8 / 1048576 }'
  }
  share_section=$(
    echo "## One copy of the weights for a family (\`share\` job)"
    echo
    echo "Made by \`scripts/bench.sh --jobs share --sizes $size\` on $(date -u +%Y-%m-%d) ($(nproc) cores,"
    echo "load average $(cut -d' ' -f1 /proc/loadavg) at the end), under \`nice\`. Five variants of one"
    echo "model, each a .pte of $size of the same LLM-shaped weights plus a 4 MiB constant of its"
    echo "own (scripts/gen_family.py; \`pack --align 4096\`), then \`etpack share v1.pte ... v5.pte -o"
    echo "out --align 4096\` against \`cp -r out copy && sync\` of what it wrote, each on a cold page"
    echo "cache (scripts/bench_share.sh). speed = cp s / share s (above 1: share is faster than"
    echo "copying its own output); cat s = \`cat\` of the five inputs to /dev/null, cold (reading"
    echo "every input once: the floor for a share that compares them byte for byte), and"
    echo "vs cat = cat s / share s; warm s = the share again with the inputs in the page cache;"
    echo "output / variant = all of out/ against one input .pte; new disk ="
    echo "\`df\` used after the share minus before (synced). On XFS, \"variants packed\": each"
    echo "packed from the checkpoint (whose tensors are not block-aligned, so no two variants share"
    echo "a block); \"variants reflinked\": the first packed, each other one \`cp --reflink\` of it then"
    echo "\`etpack update\` of its own constant (the variants share every other block)."
    echo
    echo "| disk | run | share s | cp s of the output | speed vs cp | cat s of the inputs | speed vs cat | warm share s | peak RSS MiB | inputs MiB | output MiB | output / variant | new disk MiB |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    table "$disk" "$(df -T "$work" | awk 'NR == 2 {print $2}')"
    if [[ "$xfs" == skipped* ]]; then
      echo
      echo "XFS with reflink: not run: ${xfs#skipped }"
    else
      table "$xfs" "xfs (reflink), variants packed"
      table "$xfs_reflinked" "xfs (reflink), variants reflinked"
    fi
    echo
    echo "Then \`etpack verify\` of every thin program with the shared file, and the way back:"
    echo "\`repack vK.pte --data shared.ptd --align 4096\` byte for byte against \`repack\` of the"
    echo "original with the same options (variants identical / variants):"
    grep '^ROUNDTRIP' <<<"$disk" | awk '{ printf "%s / %s on the disk", $3, $2 }'
    grep '^ROUNDTRIP' <<<"$xfs" | awk '{ printf ", %s / %s on XFS", $3, $2 }'
    grep '^ROUNDTRIP' <<<"$xfs_reflinked" | awk '{ printf ", %s / %s on XFS (reflinked variants)", $3, $2 }'
    echo "."
  )
}

if [[ " $jobs " == *" share "* ]]; then
  echo "== share $largest ($(date +%T))" >&2
  share_job "$largest"
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx share || true; } | tr '\n' ' ' | xargs)
fi

if [[ " $jobs " == *" sharemany "* ]]; then
  echo "== sharemany ($(date +%T))" >&2
  nice scripts/bench_share_many.sh "$etpack" "$work/sharemany" "100 200 400" "$runs" >&2
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx sharemany || true; } | tr '\n' ' ' | xargs)
fi

if [[ " $jobs " == *" plan "* ]]; then
  echo "== plan ($(date +%T))" >&2
  plan_job
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx plan || true; } | tr '\n' ' ' | xargs)
fi

if [[ " $jobs " == *" python "* ]]; then
  echo "== python 2GiB ($(date +%T))" >&2
  need_space "the python job" 2GiB
  mkdir -p "$work/python"
  python_section=$(scripts/bench_python.py --module-dir build-release/python \
    --dir "$work/python" --size 2GiB --runs "$runs")
  rm -rf "$work/python"
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx python || true; } | tr '\n' ' ' | xargs)
fi

if [[ " $jobs " == *" exir "* ]]; then
  echo "== exir ($(date +%T))" >&2
  need_space "the exir job" 2GiB
  mkdir -p "$work/exir"
  exir_section=$(/usr/bin/python3 bench/exir_bench.py --module-dir build-release/python \
    --dir "$work/exir" --runs "$runs")
  rm -rf "$work/exir"
  jobs=$(tr ' ' '\n' <<<"$jobs" | { grep -vx exir || true; } | tr '\n' ' ' | xargs)
fi

# against_job REV: the --against run (see the top); sets against_section.
against_section=""
if [ -n "$against" ]; then
  echo "== against $against ($(date +%T))" >&2
  need_space "the against run" "$largest"
  rev=$(git rev-parse --short "$against^{commit}")
  base="$work/against-src"
  git worktree add -q --detach "$base" "$rev"
  trap 'git worktree remove --force "$base" 2>/dev/null || true; rm -rf "$work"' EXIT
  (cd "$base" && scripts/setup.sh build-release >/dev/null &&
    meson configure build-release -Dbuildtype=release >/dev/null &&
    ninja -C build-release apps/etpack "python/etpack/_etpack$(/usr/bin/python3 -c \
      'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" >/dev/null)
  mkdir -p "$work/against"
  against_section=$(/usr/bin/python3 scripts/bench_against.py --rev "$rev" \
    --base-etpack "$base/build-release/apps/etpack" --base-module "$base/build-release/python" \
    --etpack "$etpack" --module build-release/python --dir "$work/against" \
    --size "$largest" --runs "$runs")
fi

# Only jobs that run alone were asked for: replace their sections in place
# (before the in-process one) and leave the rest of RESULTS.md as it is.
if [ -z "$jobs" ]; then
  for pair in "plan_section:Planning many tensors" "python_section:Python module" \
              "reflink_section:Shared extents" "shard_section:Sharded .ptd" \
              "update_section:In-place update" "share_section:One copy of the weights" \
              "against_section:Against" \
              "exir_section:ExecuTorch exporter objects"; do
    var="${pair%%:*}"
    [ -n "${!var}" ] || continue
    splice_section "${pair#*:}" "${!var}"
    printf '%s\n' "${!var}"
  done
  exit 0
fi

all_sizes="$sizes"
[ "$capped" = none ] || [[ " $sizes " == *" $capped "* ]] || all_sizes+=" $capped"
for size in $all_sizes; do
  for job in $jobs; do
    echo "== $job $size ($(date +%T))" >&2
    need_space "the $job job" "$size"
    w="$work/$job"
    mkdir -p "$w"
    if [ "$job" = compress ]; then
      if [[ " $sizes " == *" $size "* ]]; then compress_job "$size"; fi
      rm -rf "$w"
      continue
    fi
    bcmd=()
    "make_$job" "$size"
    if [[ " $sizes " == *" $size "* ]]; then pair "$job" "$size"; fi
    if [ "$size" = "$capped" ]; then capped_run "$job" "$size"; fi
    rm -rf "$w" "$work/copy"
  done
done

# The in-process benchmarks (bench/bench_main.cc), after the disk is quiet.
gbench=""
if [ "$gbench_filter" != none ]; then
  echo "== Google Benchmark ($(date +%T))" >&2
  drop_caches
  gbench=$(TMPDIR="$work" build-release/bench/etpack_bench --benchmark_filter="$gbench_filter" \
             2>/dev/null | sed -n '/^Benchmark/,$p' | grep -v '^-*$')
fi

# Data for the plot: one block per job (gnuplot `index`), in --jobs order.
{
  printf '# job\tsize\tsize_mib\tbytes\tetpack_s\tetpack_mibs\tcp_s\tcp_mibs\tetpack_rss_mib\tcp_rss_mib\tcache_growth_mib\n'
  for job in ${jobs//compress/}; do
    printf '\n\n# %s\n' "$job"
    printf '%s\n' "${data[@]}" | awk -F'\t' -v j="$job" '$1 == j'
  done
} > "$out/results.tsv"

plot() {
  local term=png i=0 xt="" tp="" rp="" job mib lo=0 hi=0
  if gnuplot -e "set terminal" 2>&1 | grep -qw pngcairo; then term=pngcairo; fi
  for size in $sizes; do
    mib=$(($(to_bytes "$size") >> 20))
    xt+="\"$size\" $mib, "
    if ((lo == 0 || mib < lo)); then lo=$mib; fi
    if ((mib > hi)); then hi=$mib; fi
  done
  local -A color=([demo]=1 [pack]=2 [ptd]=3 [bundle]=4 [checksum]=5 [fat]=6)   # same colour in every plot
  for job in ${jobs//compress/}; do
    local f="'$out/results.tsv' index $i using 3" lc="lc ${color[$job]}"
    tp+="$f:6 with linespoints $lc pt 7 dt 1 title '$job etpack', "
    tp+="$f:8 with linespoints $lc pt 6 dt 2 title '$job cp', "
    rp+="$f:9 with linespoints $lc pt 7 dt 1 title '$job etpack', "
    rp+="$f:10 with linespoints $lc pt 6 dt 2 title '$job cp', "
    i=$((i + 1))
  done
  gnuplot <<EOF
set terminal $term size 1000,900
set output '$out/results.png'
set datafile separator "\t"
set multiplot layout 2,1 title "etpack vs cp of the same bytes ($(date -u +%Y-%m-%d), $(nproc) cores)"
set logscale x 2
set xrange [$lo / 1.4 : $hi * 1.4]
set xtics (${xt%, })
set xlabel "size"
set lmargin 10
set grid
set key outside right top
set yrange [0:*]
set ylabel "MiB/s"
set title "Throughput: median of $runs runs, cold page cache, synced"
plot ${tp%, }
set ylabel "MiB"
set title "Peak RSS (largest of $runs runs)"
plot ${rp%, }
unset multiplot
EOF
}

{
  echo "# Benchmark results"
  echo
  echo "Made by \`scripts/bench.sh --jobs \"$jobs\" --sizes \"$sizes\" --runs $runs --capped $capped\` on $(date -u +%Y-%m-%d)."
  echo
  echo "Machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)),"
  echo "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r),"
  echo "disk $(df -h "$work" | awk 'NR==2 {print $1", "$2" total"}') ($(findmnt -n -o FSTYPE -T "$work"))."
  echo
  echo "Each figure is the median of $runs runs (range in brackets), page cache dropped"
  echo "before every run. Both sides make the data durable (etpack syncs before its"
  echo "rename; cp is timed as \`cp && sync\`). Ratio = etpack throughput / cp throughput"
  echo "on the same bytes. Peak RSS is the largest of the runs. Cache growth is the"
  echo "median change of \`Cached:\` in /proc/meminfo over a run."
  echo
  echo "Jobs: \`demo\` = \`etpack demo --size S\` (generated weights), cp of the .pte;"
  echo "\`pack\` = \`etpack pack manifest.json\` whose constants are file ranges into"
  echo "safetensors shards of S in total, cp of the shards; \`ptd\` = \`etpack ptd\` of such"
  echo "shards, cp of the shards; \`bundle\` = \`etpack bundle\` of a demo .pte of S with"
  echo "one small test case, cp of the .pte; \`fat\` = \`etpack pack\` of a fat delegate"
  echo "whose native program and two specializations share S of weights from one file,"
  echo "cp of the weights and the two 8 MiB payloads."
  echo
  echo "| job | size | etpack s | etpack MiB/s | cp s | cp MiB/s | ratio | etpack peak RSS MiB | cp peak RSS MiB | page cache growth MiB | notes |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "![Throughput and peak RSS of etpack and cp against size](results.png)"
  echo
  echo "Plotted data: [results.tsv](results.tsv). How these figures set the writer's"
  echo "defaults: [docs/performance.md](../docs/performance.md)."
  if [ "$capped" != none ]; then
    echo
    echo "## Under a $((cap_as >> 30)) GiB address-space cap"
    echo
    echo "Each job once at $capped as \`/usr/bin/time -v prlimit --as=$cap_as etpack ...\`,"
    echo "page cache dropped first. The cap limits virtual memory, so mapped input and"
    echo "output windows count against it, not only resident memory."
    echo
    echo "| job | size | result | wall s | peak RSS MiB | error |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${caprows[@]}"
  fi
  # The sections of the jobs that also run alone, those that ran.
  for var in python_section plan_section shard_section reflink_section update_section share_section \
             exir_section; do
    [ -n "${!var}" ] || continue
    echo
    printf '%s\n' "${!var}"
  done
  if ((${#zrows[@]})); then
    echo
    echo "## Transport archives (\`compress\` job)"
    echo
    echo "Synthetic .ptd files (bench/gen_weights.cc): layers of three 1024×4096"
    echo "matrices and one 4096 norm; BF16/F16 values ~N(0, 0.02), int8 the same"
    echo "quantised, or uniform random bytes. Median of $runs runs; both sides fsync their"
    echo "output. Speed = zstd time / etpack time. Ratio = archive size / file size."
    echo "Tensor = \`etpack decompress --tensor layers.<mid>.wq\`."
    echo
    echo "| data | size | etpack compress s | zstd -T2 -3 s | speed | etpack ratio | zstd ratio | size vs zstd | etpack decompress s | zstd -d s | decompress peak RSS MiB | tensor s | tensor peak RSS MiB |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${zrows[@]}"
  fi
  if [ -n "$gbench" ]; then
    echo
    echo "## In-process (Google Benchmark, \`build-release/bench/etpack_bench\`)"
    echo
    echo "Planning (\`PlanTensors/N\`: pass one and the finished header for N tensors),"
    echo "225 delegate blobs planned and written to memory, XXH3 over resident buffers,"
    echo "and the file sink alone writing 256 MiB (\`SinkWrite\`: mapped windows vs"
    echo "pwrite, window size, write-back depth; \`peak_rss_above_buffers_MiB\` is the peak"
    echo "RSS over the caller's own buffer) or copying a 256 MiB file dropped from the"
    echo "page cache (\`FileCopy\`: copy_file_range vs pread). Wall time; sync on."
    echo
    echo '```'
    printf '%s\n' "$gbench"
    echo '```'
  fi
} > "$out/RESULTS.md"

if ! plot; then echo "bench: gnuplot failed; $out/results.png not written" >&2; fi
cat "$out/RESULTS.md"
