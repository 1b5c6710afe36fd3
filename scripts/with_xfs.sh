#!/usr/bin/env bash
# Runs a command with a scratch XFS file system that shares extents (reflink)
# mounted, its directory in ETPACK_XFS_DIR; unmounts and deletes it after.
# Usage: scripts/with_xfs.sh [--size BYTES] CMD [ARGS...]
# Where the machine cannot make one (not root, no mkfs.xfs, no loop device)
# it says why on stderr and runs CMD without ETPACK_XFS_DIR, so tests that
# need it skip with that reason instead of failing. The image lives under
# ETPACK_XFS_IMAGE_DIR (default /tmp), sparse, so it costs only what is written.
set -uo pipefail
size=2G
if [ "${1:-}" = --size ]; then size="$2"; shift 2; fi
[ $# -ge 1 ] || { echo "usage: $0 [--size BYTES] CMD [ARGS...]" >&2; exit 2; }

why=""
if [ "$(id -u)" != 0 ]; then why="not root (a loop mount needs root)"
elif ! command -v mkfs.xfs >/dev/null; then why="mkfs.xfs not found (Debian package xfsprogs)"
elif ! [ -e /dev/loop-control ]; then why="no /dev/loop-control (no loop devices)"
fi
if [ -n "$why" ]; then
  echo "with_xfs: no scratch XFS: $why" >&2
  export ETPACK_XFS_SKIP="$why"
  exec "$@"
fi

base="$(mktemp -d "${ETPACK_XFS_IMAGE_DIR:-/tmp}/etpack-xfs.XXXXXX")"
img="$base/image" mnt="$base/mnt"
cleanup() {
  mountpoint -q "$mnt" && umount "$mnt"
  rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$mnt"
if ! truncate -s "$size" "$img" || ! mkfs.xfs -q -m reflink=1 "$img" ||
   ! mount -o loop "$img" "$mnt"; then
  echo "with_xfs: could not make or mount an XFS image at $img" >&2
  export ETPACK_XFS_SKIP="mounting a loop XFS image failed"
  "$@"; exit $?
fi
ETPACK_XFS_DIR="$mnt" "$@"
