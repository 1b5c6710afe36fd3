#!/usr/bin/env bash
# The `update` job of scripts/bench.sh: `etpack update` of a .ptd changing
# about 10% of its tensors, timed against a full rewrite in the same run,
# with the disk it takes (df before and after); then a kill loop.
#
#   scripts/bench_update.sh ETPACK DIR SIZE KILLS
#
# DIR is where the files go: a scratch XFS with reflink (scripts/with_xfs.sh
# mounts one; the update is then a clone) or an ext4 directory (a streamed
# copy, timed against `cp` of the same file). Prints the results as markdown
# table rows on stdout, progress on stderr. The kill loop sends SIGKILL to
# KILLS runs of `etpack update` on a small .ptd, each after a random delay,
# and checks after each that the file is byte for byte the old or the new
# one and that no other file appeared.
set -euo pipefail
etpack="$1" dir="$2" size="$3" kills="$4"
here="$(cd "$(dirname "$0")" && pwd)"
fs=$(stat -f -c %T "$dir")
. "$here/bench_lib.sh"

# new_weights CHECKPOINT_DIR OUT FRACTION SEED: a safetensors file with
# every (1 / FRACTION)-th tensor of the checkpoint (in file order): same
# names, dtypes and shapes, other bytes.
new_weights() {
  /usr/bin/python3 - "$1" "$2" "$3" "$4" <<'EOF'
import json, os, struct, sys
src, out, fraction, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
shards = sorted(f for f in os.listdir(src) if f.endswith(".safetensors"))
tensors = []
for s in shards:
    with open(os.path.join(src, s), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    for k, v in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        tensors.append((k, v))
total = sum(v["data_offsets"][1] - v["data_offsets"][0] for _, v in tensors)
# Every (1 / FRACTION)-th matrix from the middle of the first stride: about
# FRACTION of the bytes (matrices hold nearly all of them, layers are alike).
step = max(1, round(1 / fraction))
chosen = [t for t in tensors if len(t[1]["shape"]) >= 2][step // 2::step]
got = sum(v["data_offsets"][1] - v["data_offsets"][0] for _, v in chosen)
header, off = {}, 0
for k, v in chosen:
    n = v["data_offsets"][1] - v["data_offsets"][0]
    header[k] = {"dtype": v["dtype"], "shape": v["shape"], "data_offsets": [off, off + n]}
    off += n
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
block = bytes((seed * 37 + i * 11) & 0xFF for i in range(1 << 20))
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    left = off
    while left:
        f.write(block[:min(left, len(block))])
        left -= min(left, len(block))
print(len(chosen), len(tensors), got, total)
EOF
}

json_field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

w="$dir/etpack-bench-update"
rm -rf "$w"
mkdir -p "$w"
trap 'rm -rf "$w"' EXIT

echo "   update ($fs): checkpoint of $size" >&2
python3 "$here/gen_safetensors.py" "$w/ckpt" --size "$size" --shards 1 >/dev/null
read -r nchanged ntensors changed total < <(new_weights "$w/ckpt" "$w/new.safetensors" 0.10 7)
# Other bytes for the same tensors: a second update that changes them again.
[ "$fs" = xfs ] || new_weights "$w/ckpt" "$w/new2.safetensors" 0.10 9 >/dev/null

# The full rewrite: the .ptd written from the checkpoint, every byte.
drop_caches
t0=$(now)
"$etpack" ptd "$w/ckpt/model.safetensors.index.json" -o "$w/m.ptd" --align 4096 >/dev/null
full=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
file=$(stat -c %s "$w/m.ptd")
rm -rf "$w/ckpt"

# On XFS a reflink copy keeps the old version's blocks referenced, so that
# df shows what the new file holds of its own (without it the old file's
# replaced blocks are freed and the difference is about zero).
[ "$fs" != xfs ] || cp --reflink=always "$w/m.ptd" "$w/m.keep"
before=$(used "$dir")
drop_caches
t0=$(now)
"$etpack" update "$w/m.ptd" --from "$w/new.safetensors" --json > "$w/report.json"
upd=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
after=$(used "$dir")
"$etpack" verify "$w/m.ptd" >/dev/null
rm -f "$w/m.keep"
rewritten=$(json_field "$w/report.json" bytes_rewritten)
written=$(json_field "$w/report.json" bytes_written)
cloned=$(json_field "$w/report.json" cloned)
echo "   update: $upd s (full write $full s), rewrote $rewritten of $file bytes, wrote $written, cloned $cloned, disk +$(((after - before) >> 20)) MiB" >&2
awk -v fs="$fs" -v f="$file" -v n="$nchanged" -v t="$ntensors" -v r="$rewritten" -v wr="$written" \
    -v c="$cloned" -v u="$upd" -v full="$full" -v d="$((after - before))" 'BEGIN {
  printf "| %s | %.2f | %d of %d | %.0f (%.1f%%) | %.0f | %s | %.2f | %.2f | %.1f× | %.0f (%.1f%%) |\n",
    fs, f / 2^30, n, t, r / 2^20, 100 * r / f, wr / 2^20, c, u, full, full / u, d / 2^20, 100 * d / f }'

if [ "$fs" != xfs ]; then
  # Elsewhere the update is a streamed copy of the whole file: time it
  # against cp of the same file, both on a cold cache.
  drop_caches
  t0=$(now)
  cp "$w/m.ptd" "$w/copy.ptd"
  sync
  cpt=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
  rm -f "$w/copy.ptd"
  drop_caches
  t0=$(now)
  "$etpack" update "$w/m.ptd" --from "$w/new2.safetensors" >/dev/null
  sync
  upt=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
  echo "   ext4: update $upt s, cp $cpt s" >&2
  awk -v fs="$fs" -v f="$file" -v u="$upt" -v c="$cpt" 'BEGIN {
    printf "| %s, whole-file copy | %.2f | update %.2f s | cp %.2f s | %.2f× cp |\n", fs, f / 2^30, u, c, c / u }'
fi
rm -f "$w/m.ptd" "$w/new.safetensors" "$w/new2.safetensors"

# The kill loop, on a small file: old and new weights alternate, so every
# run that gets through changes the file.
python3 "$here/gen_safetensors.py" "$w/small" --size 256MiB --shards 1 >/dev/null
"$etpack" ptd "$w/small/model.safetensors.index.json" -o "$w/k.ptd" --integrity >/dev/null
cp "$w/k.ptd" "$w/k.old"
new_weights "$w/small" "$w/a.safetensors" 0.10 3 >/dev/null
cp "$w/k.ptd" "$w/k.new"
"$etpack" update "$w/k.new" --from "$w/a.safetensors" >/dev/null
# Weights that restore the old bytes: the same tensors read from the old file.
cp "$w/k.old" "$w/old_weights.ptd"
mkdir "$w/loop"
mv "$w/k.ptd" "$w/loop/k.ptd"
old_sum=$(md5sum < "$w/k.old") new_sum=$(md5sum < "$w/k.new")
t0=$(now)
"$etpack" update "$w/loop/k.ptd" --from "$w/a.safetensors" >/dev/null
"$etpack" update "$w/loop/k.ptd" --from "$w/old_weights.ptd" >/dev/null
one=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%d", (b - a) / 2 * 1000 }')
killed=0 completed=0 bad=0
for ((i = 0; i < kills; i++)); do
  cur=$(md5sum < "$w/loop/k.ptd")
  if [ "$cur" = "$old_sum" ]; then from="$w/a.safetensors"; else from="$w/old_weights.ptd"; fi
  pause=$(awk -v d="$((RANDOM % (one + 1)))" 'BEGIN { printf "%.3f", d / 1000 }')
  "$etpack" update "$w/loop/k.ptd" --from "$from" >/dev/null 2>&1 &
  pid=$!
  sleep "$pause"
  if kill -KILL "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null || true
  sum=$(md5sum < "$w/loop/k.ptd")
  if [ "$sum" != "$old_sum" ] && [ "$sum" != "$new_sum" ]; then
    echo "   kill $i: k.ptd is neither the old nor the new file" >&2
    bad=$((bad + 1))
  fi
  if [ "$sum" != "$cur" ]; then completed=$((completed + 1)); fi
  if [ "$(ls -A "$w/loop")" != k.ptd ]; then
    echo "   kill $i: stray files: $(ls -A "$w/loop" | tr '\n' ' ')" >&2
    bad=$((bad + 1))
  fi
done
"$etpack" verify "$w/loop/k.ptd" >/dev/null || bad=$((bad + 1))
echo "   kill loop ($fs): $kills runs, $killed killed, $completed completed, $bad bad" >&2
echo "KILLS | $fs | $kills | $killed | $completed | $bad |"
[ "$bad" = 0 ]
