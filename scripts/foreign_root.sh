#!/usr/bin/env bash
# A Debian root for another architecture, run under qemu-user (no docker):
#   scripts/foreign_root.sh make ROOT ARCH SUITE   debootstrap --foreign, then
#       the second stage inside the root through qemu-ARCH-static; copies the
#       machine's pip config and CA certificates in (pip inside must reach the
#       same index as pip outside); installs python3-venv.
#   scripts/foreign_root.sh run ROOT CMD...        CMD in the root, with /proc,
#       /sys and /dev bound in for its duration (unbound on any exit).
# Installs debootstrap, qemu-user-static and binfmt-support if missing.
# Example: scripts/foreign_root.sh make /var/tmp/root-bookworm-arm64 arm64 bookworm
set -euo pipefail
fail() { echo "foreign_root: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mount)"

qemu_for() {
  case "$1" in
    arm64) echo qemu-aarch64-static ;;
    *) fail "no qemu-user mapping for Debian architecture '$1'" ;;
  esac
}

need_tools() {
  command -v debootstrap >/dev/null && command -v qemu-aarch64-static >/dev/null &&
    [ -e /usr/sbin/update-binfmts ] && return
  apt-get install -y debootstrap qemu-user-static binfmt-support ||
    fail "apt-get install debootstrap qemu-user-static binfmt-support failed"
}

mounted=()
unbind() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" || true; done
  mounted=()
}

# run ROOT CMD...: the bind mounts live exactly as long as CMD.
run() {
  local root="$1"
  shift
  [ -x "$root/bin/sh" ] || fail "$root is not a made root (no bin/sh): run 'make' first"
  # Global, not local: the EXIT trap runs after this function has returned.
  mounted=()
  trap unbind EXIT
  local d
  for d in proc sys dev; do
    mount --bind "/$d" "$root/$d" || fail "mount --bind /$d $root/$d failed"
    mounted+=("$root/$d")
  done
  # Fresh name resolution each run: the host's may have changed.
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  local rc=0
  chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
    LANG=C.UTF-8 "$@" || rc=$?
  # Unbound here too, not only by the trap: a run inside $(...) may not run
  # its EXIT trap, and one left mounted would stay beneath the next run's.
  unbind
  return "$rc"
}

copy_pip_config() {
  local root="$1" f
  mkdir -p "$root/etc/xdg/pip" "$root/root/.config/pip" "$root/usr/local/share/ca-certificates"
  for f in /etc/pip.conf /etc/xdg/pip/* /root/.config/pip/pip.conf; do
    [ -f "$f" ] && cp "$f" "$root$f"
  done
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
}

# The kernel runs ARCH binaries through qemu only when binfmt_misc is mounted
# and qemu's entry is enabled (a container may start with neither).
register_binfmt() {
  local qemu="$1" entry="${1%-static}"
  [ -e /proc/sys/fs/binfmt_misc/register ] ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    fail "cannot mount binfmt_misc: the kernel would not run $qemu's binaries"
  update-binfmts --enable "$entry" || fail "update-binfmts --enable $entry failed"
}

make_root() {
  local root="$1" arch="$2" suite="$3" qemu start
  qemu="$(qemu_for "$arch")"
  need_tools
  register_binfmt "$qemu"
  [ -e "$root/bin/sh" ] && fail "$root already holds a root: remove it first"
  start=$SECONDS
  debootstrap --foreign --arch="$arch" --variant=minbase \
    --include=ca-certificates,python3,python3-venv,python3-pip "$suite" "$root" ||
    fail "debootstrap first stage of $suite/$arch into $root failed"
  echo "foreign_root: first stage $((SECONDS - start)) s"
  cp "$(command -v "$qemu")" "$root/usr/bin/"
  start=$SECONDS
  chroot "$root" /debootstrap/debootstrap --second-stage ||
    fail "debootstrap second stage in $root failed (see $root/debootstrap/debootstrap.log)"
  echo "foreign_root: second stage $((SECONDS - start)) s"
  copy_pip_config "$root"
  run "$root" update-ca-certificates >/dev/null || fail "update-ca-certificates in $root failed"
  touch "$root/.etpack-root-made"
  echo "foreign_root: $root ($suite $arch): $(run "$root" python3 --version)"
}

case "${1:-}" in
  make) [ $# = 4 ] || fail "usage: make ROOT ARCH SUITE"; make_root "$2" "$3" "$4" ;;
  run) [ $# -ge 3 ] || fail "usage: run ROOT CMD..."; shift; run "$@" ;;
  *) fail "usage: $0 make ROOT ARCH SUITE | run ROOT CMD..." ;;
esac
