# Helpers the whole-run bench scripts share (sourced, not run).
#   drop_caches       sync, then drop the page cache when permitted
#   used DIR          bytes used on DIR's file system, after a sync and a
#                     second (XFS frees a replaced file's blocks in the
#                     background)
#   now               seconds since the epoch, with nanoseconds
drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}
used() {
  sync
  sleep 1
  df -B1 --output=used "$1" | tail -1
}
now() { date +%s.%N; }
