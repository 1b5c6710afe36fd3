#!/usr/bin/env bash
# Whole-process benchmark: each etpack job against `cp` of the same bytes,
# on the same disk, in the same run (absolute times drift on shared
# machines; the ratio is the figure to quote). Before every run the page
# cache is dropped (when permitted); wall time and peak RSS come from
# /usr/bin/time -v, page-cache growth from `Cached:` in /proc/meminfo.
#
#   scripts/bench.sh [--jobs "demo ptd"] [--sizes "256MiB 1GiB 6GiB"]
#                    [--runs 3] [--dir DIR]
#
# Jobs:
#   demo  etpack demo --size S           vs  cp of the written .pte
#   ptd   etpack ptd index.json (3 shards of S in total, made by
#         scripts/gen_safetensors.py)    vs  cp of the three shards
#
# Both sides make the data durable: etpack syncs before its rename, so cp
# is timed as `cp && sync`. Writes bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="demo ptd"
sizes="256MiB 1GiB 6GiB"
runs=3
dir="${TMPDIR:-/tmp}/etpack-bench"
while (($#)); do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "usage: $0 [--jobs LIST] [--sizes LIST] [--runs N] [--dir DIR]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh build-release >/dev/null
meson configure build-release -Dbuildtype=release >/dev/null
ninja -C build-release apps/etpack >/dev/null
etpack="$PWD/build-release/apps/etpack"
rm -rf "$dir"
mkdir -p "$dir"

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}
cached_kib() { awk '/^Cached:/ {print $2}' /proc/meminfo; }

# measure CMD... : prints "wall_s peak_rss_kib cache_growth_kib"
measure() {
  local tf before after wall rss
  tf=$(mktemp)
  drop_caches
  before=$(cached_kib)
  if ! /usr/bin/time -v "$@" >/dev/null 2>"$tf"; then
    cat "$tf" >&2; rm -f "$tf"; return 1
  fi
  after=$(cached_kib)
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$tf")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tf")
  rm -f "$tf"
  echo "$wall $rss $((after - before))"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%s–%s", lo, hi}'; }
maxof() { sort -g | tail -1; }

rows=()
# pair JOB SIZE BYTES -- ETPACK_CMD... -- CP_CMD...
pair() {
  local job=$1 size=$2 bytes=$3; shift 4
  local ecmd=() ccmd=()
  while [ "$1" != "--" ]; do ecmd+=("$1"); shift; done; shift
  ccmd=("$@")
  local ew=() er=() ec=() cw=() cr=() w m c r
  for ((r = 1; r <= runs; r++)); do
    read -r w m c < <(measure "${ecmd[@]}")
    ew+=("$w"); er+=("$m"); ec+=("$c")
    read -r w m c < <(measure "${ccmd[@]}")
    cw+=("$w"); cr+=("$m")
    echo "   $job $size run $r: etpack ${ew[-1]} s, ${er[-1]} KiB | cp ${cw[-1]} s" >&2
  done
  rows+=("$(awk -v job="$job" -v s="$size" -v b="$bytes" \
      -v ew="$(printf '%s\n' "${ew[@]}" | median)" -v cw="$(printf '%s\n' "${cw[@]}" | median)" \
      -v erng="$(printf '%s\n' "${ew[@]}" | range)" -v crng="$(printf '%s\n' "${cw[@]}" | range)" \
      -v er="$(printf '%s\n' "${er[@]}" | maxof)" -v cr="$(printf '%s\n' "${cr[@]}" | maxof)" \
      -v ec="$(printf '%s\n' "${ec[@]}" | median)" \
      'BEGIN { mib = b / 1048576;
               printf "| %s | %s | %.2f (%s) | %.0f | %.2f (%s) | %.0f | **%.2f×** | %.1f | %.1f | %.0f |",
                 job, s, ew, erng, mib / ew, cw, crng, mib / cw, cw / ew, er / 1024, cr / 1024, ec / 1024 }')")
}

for size in $sizes; do
  for job in $jobs; do
    echo "== $job $size" >&2
    case "$job" in
      demo)
        "$etpack" demo --size "$size" -o "$dir" >/dev/null   # the file cp copies
        bytes=$(stat -c %s "$dir/demo.pte")
        pair demo "$size" "$bytes" -- "$etpack" demo --size "$size" -o "$dir" \
          -- sh -c "cp '$dir/demo.pte' '$dir/copy.pte' && sync"
        rm -f "$dir/demo.pte" "$dir/copy.pte" ;;
      ptd)
        mkdir -p "$dir/ckpt" "$dir/copy"
        python3 scripts/gen_safetensors.py "$dir/ckpt" --size "$size" --shards 3 >/dev/null
        bytes=$(cat "$dir"/ckpt/*.safetensors | wc -c)
        pair ptd "$size" "$bytes" -- "$etpack" ptd "$dir/ckpt/model.safetensors.index.json" -o "$dir/out.ptd" \
          -- sh -c "cp '$dir'/ckpt/*.safetensors '$dir/copy/' && sync"
        rm -rf "$dir/ckpt" "$dir/copy" "$dir/out.ptd" ;;
      *) echo "unknown job $job" >&2; exit 2 ;;
    esac
  done
done

{
  echo "# Benchmark results"
  echo
  echo "Made by \`scripts/bench.sh --jobs \"$jobs\" --sizes \"$sizes\" --runs $runs\` on $(date -u +%Y-%m-%d)."
  echo
  echo "Machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)),"
  echo "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r),"
  echo "disk $(df -h "$dir" | awk 'NR==2 {print $1", "$2" total"}') ($(findmnt -n -o FSTYPE -T "$dir"))."
  echo
  echo "Each figure is the median of $runs runs (range in brackets), page cache dropped"
  echo "before every run. Both sides make the data durable (etpack syncs before its"
  echo "rename; cp is timed as \`cp && sync\`). Ratio = etpack throughput / cp throughput"
  echo "on the same bytes. Peak RSS is the largest of the runs. Cache growth is the"
  echo "median change of \`Cached:\` in /proc/meminfo over a run."
  echo
  echo "| job | size | etpack s | etpack MiB/s | cp s | cp MiB/s | ratio | etpack peak RSS MiB | cp peak RSS MiB | page cache growth MiB |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} > bench/RESULTS.md
cat bench/RESULTS.md
