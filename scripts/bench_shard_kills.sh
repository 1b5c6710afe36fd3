#!/usr/bin/env bash
# The sharded write's kill loop (issue 21): `etpack ptd --max-shard-bytes`
# of a small checkpoint into an empty directory, killed (SIGKILL) after a
# random pause of up to one run's time, KILLS times. After each, the
# directory must hold nothing or the complete set (every shard byte-equal to
# the set an unkilled run writes), and no other file.
#   scripts/bench_shard_kills.sh ETPACK DIR KILLS
# Prints a table row on stdout; progress on stderr; exit 1 on any bad run.
set -euo pipefail
etpack="$1" dir="$2" kills="$3"
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/bench_lib.sh"
w="$dir/shard_kills"
rm -rf "$w" && mkdir -p "$w/ref" "$w/loop"
python3 "$here/gen_safetensors.py" "$w/ckpt" --size 256MiB --shards 2 >/dev/null
write() { "$etpack" ptd "$w/ckpt/model.safetensors.index.json" -o "$1/m.ptd" --max-shard-bytes 96MiB; }
t0=$(now)
write "$w/ref" >/dev/null
one=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%d", (b - a) * 1000 }')
ref=$(cd "$w/ref" && md5sum -- * | sort)
shards=$(ls "$w/ref" | wc -l)
killed=0 complete=0 empty=0 bad=0
for ((i = 0; i < kills; i++)); do
  rm -f "$w"/loop/* "$w"/loop/.[!.]* 2>/dev/null || true
  pause=$(awk -v d="$((RANDOM % (one + 1)))" 'BEGIN { printf "%.3f", d / 1000 }')
  write "$w/loop" >/dev/null 2>&1 &
  pid=$!
  sleep "$pause"
  if kill -KILL "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null || true
  if [ -z "$(ls -A "$w/loop")" ]; then
    empty=$((empty + 1))
  elif [ "$(cd "$w/loop" && md5sum -- * | sort)" = "$ref" ] &&
       [ "$(ls -A "$w/loop" | wc -l)" = "$shards" ]; then
    complete=$((complete + 1))
  else
    echo "   kill $i: neither nothing nor the whole set: $(ls -A "$w/loop" | tr '\n' ' ')" >&2
    bad=$((bad + 1))
  fi
done
echo "   shard kill loop: $kills runs ($shards shards a set), $killed killed, $empty left nothing, $complete left the whole set, $bad bad" >&2
echo "| $kills | $shards | $killed | $empty | $complete | $bad |"
rm -rf "$w"
[ "$bad" = 0 ]
