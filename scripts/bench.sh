#!/usr/bin/env bash
# Whole-process benchmark: etpack against `cp` of the same bytes, on the same
# disk, in the same run (absolute times drift on shared machines; the ratio
# is the figure to quote). For each size and each of RUNS runs the page
# cache is dropped first (when permitted), then wall time and peak RSS come
# from /usr/bin/time -v, and page-cache growth from /proc/meminfo.
#
#   scripts/bench.sh [--sizes "256MiB 1GiB 6GiB"] [--runs 3] [--dir DIR]
#
# Both sides include making the data durable: etpack syncs before its
# rename, so cp is timed as `cp && sync`. Writes bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="256MiB 1GiB 6GiB"
runs=3
dir="${TMPDIR:-/tmp}/etpack-bench"
while (($#)); do
  case "$1" in
    --sizes) sizes="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "usage: $0 [--sizes LIST] [--runs N] [--dir DIR]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh build-release >/dev/null
meson configure build-release -Dbuildtype=release >/dev/null
ninja -C build-release apps/etpack >/dev/null
etpack="$PWD/build-release/apps/etpack"
mkdir -p "$dir"

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}
cached_kib() { awk '/^Cached:/ {print $2}' /proc/meminfo; }

# run LABEL CMD... : prints "wall_s rss_kib cache_growth_kib"
run() {
  local tf; tf=$(mktemp)
  drop_caches
  local before; before=$(cached_kib)
  /usr/bin/time -v "$@" >/dev/null 2>"$tf"
  local after; after=$(cached_kib)
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$tf")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tf")
  rm -f "$tf"
  echo "$wall $rss $((after - before))"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%s–%s", lo, hi}'; }

rows=()
for size in $sizes; do
  echo "== $size" >&2
  e_wall=(); e_rss=(); e_cache=(); c_wall=(); c_rss=()
  for ((r = 1; r <= runs; r++)); do
    read -r w m c < <(run "$etpack" demo --size "$size" -o "$dir")
    e_wall+=("$w"); e_rss+=("$m"); e_cache+=("$c")
    read -r w m c < <(run sh -c "cp '$dir/demo.pte' '$dir/copy.pte' && sync")
    c_wall+=("$w"); c_rss+=("$m")
    rm -f "$dir/copy.pte"
    echo "   run $r: etpack ${e_wall[-1]} s ${e_rss[-1]} KiB | cp ${c_wall[-1]} s" >&2
  done
  bytes=$(stat -c %s "$dir/demo.pte")
  rm -f "$dir/demo.pte"
  ew=$(printf '%s\n' "${e_wall[@]}" | median); cw=$(printf '%s\n' "${c_wall[@]}" | median)
  er=$(printf '%s\n' "${e_rss[@]}" | sort -n | tail -1)
  ec=$(printf '%s\n' "${e_cache[@]}" | median)
  cr=$(printf '%s\n' "${c_rss[@]}" | sort -n | tail -1)
  rows+=("$(awk -v s="$size" -v b="$bytes" -v ew="$ew" -v cw="$cw" -v er="$er" -v cr="$cr" -v ec="$ec" \
      -v erng="$(printf '%s\n' "${e_wall[@]}" | range)" -v crng="$(printf '%s\n' "${c_wall[@]}" | range)" \
      'BEGIN { mib = b / 1048576;
               printf "| etpack demo | %s | %.2f (%s) | %.0f | %.2f (%s) | %.0f | **%.2f×** | %.1f | %.1f | %.0f |",
                 s, ew, erng, mib / ew, cw, crng, mib / cw, cw / ew, er / 1024, cr / 1024, ec / 1024 }')")
done

{
  echo "# Benchmark results"
  echo
  echo "Made by \`scripts/bench.sh --sizes \"$sizes\" --runs $runs\` on $(date -u +%Y-%m-%d)."
  echo
  echo "Machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)),"
  echo "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r),"
  echo "disk $(df -h "$dir" | awk 'NR==2 {print $1", "$2" total"}') ($(findmnt -n -o FSTYPE -T "$dir"))."
  echo
  echo "Each figure is the median of $runs runs (range in brackets), page cache dropped"
  echo "before every run. Both sides make the data durable (etpack syncs before its rename;"
  echo "cp is timed as \`cp && sync\`). Ratio = etpack throughput / cp throughput."
  echo "Peak RSS is the largest of the runs. Cache growth = change of \`Cached:\` in /proc/meminfo."
  echo
  echo "| job | size | etpack s | etpack MiB/s | cp s | cp MiB/s | ratio | etpack peak RSS MiB | cp peak RSS MiB | page cache growth MiB |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} > bench/RESULTS.md
cat bench/RESULTS.md
