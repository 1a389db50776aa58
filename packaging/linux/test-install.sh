#!/usr/bin/env bash
# The Debian package's install test: builds build/linux/cflow-studio.deb (build-deb.sh), installs it
# with apt into a clean Debian 12 root made by debootstrap (minbase, from the mirror the host's apt
# uses; dependencies resolved from that mirror), and from the installed paths runs `cflow --version`,
# `cflow generate` on the bundled default model, `cflow scorecard --claim 5` (reads the installed zoo)
# and `cflow-studio --self-test` under Xvfb, keeping its screenshot; then purges the package and
# checks that every file it installed is gone.
#
#   packaging/linux/test-install.sh [--build-dir DIR] [--deb FILE]
#     --build-dir DIR  package this configured tree (CI: build/ci) instead of a Release build
#     --deb FILE       test this package as it is (no build)
#
# Needs root for debootstrap, mount and chroot: run as root, or as a user with sudo. The debootstrap
# root is cached as a tarball outside the clone, keyed by suite, Debian point release and variant:
#   ${CFLOW_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cflow-ci}/debootstrap-bookworm-12.N-minbase.tar
# and the .debs apt downloads into it in apt-archives-bookworm/ beside it, so a rerun downloads nothing.
# The screenshot: ${CFLOW_CI_ARTIFACTS:-artifacts}/screenshots/deb-install/studio-1366x768.png.
# shellcheck disable=SC2016  # dpkg-query's '${Package}' / '${Status}' formats are meant literally
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
suite="bookworm"
app_id="io.github.cflowstudio.CflowStudio"

usage() { awk 'NR > 1 && /^#/ && !/^# shellcheck/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" >&2; }
die() { echo "test-install.sh: $*" >&2; exit 1; }

build_args=()
deb=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir)
      [[ $# -ge 2 && -n "$2" ]] || die "--build-dir needs a folder"
      build_args=(--build-dir "$2"); shift 2 ;;
    --deb)
      [[ $# -ge 2 && -n "$2" ]] || die "--deb needs a file"
      deb="$(realpath -e "$2" 2>/dev/null)" || die "--deb: no such file '$2'"
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage; die "unknown argument '$1'" ;;
  esac
done
[[ -z "$deb" || ${#build_args[@]} -eq 0 ]] || die "--deb and --build-dir exclude each other"
cd "$repo_root"

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}
if [[ "$(id -u)" -ne 0 ]] && ! command -v sudo >/dev/null 2>&1; then
  die "needs root (debootstrap, mount, chroot): run it as root or install sudo"
fi
command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed (packaging/install-deps.sh)"

t_start=$SECONDS
phase_t0=$SECONDS
phase() {
  echo "::: [$((SECONDS - t_start)) s] $*"
  phase_t0=$SECONDS
}
took() { echo "    ($((SECONDS - phase_t0)) s)"; }

# --- 1. the package -----------------------------------------------------------------------------
if [[ -z "$deb" ]]; then
  phase "building the package"
  "$repo_root/packaging/linux/build-deb.sh" "${build_args[@]}"
  deb="$repo_root/build/linux/cflow-studio.deb"
  took
fi
dpkg-deb --info "$deb" >/dev/null 2>&1 || die "$deb is not a Debian package"
version="$(dpkg-deb -f "$deb" Version)"

# --- the host's Debian mirror -------------------------------------------------------------------
# "URI SUITE COMPONENTS..." for each enabled deb source of this suite and its -updates/-security in
# the host's apt configuration: one-line .list files and deb822 .sources files.
host_debian_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && NF >= 4 { $1 = ""; print }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no")
          for (u = 1; u <= nu; u++) for (s = 1; s <= ns; s++) print uris[u], suites[s], comps
        types = ""; enabled = "yes"; comps = ""; nu = 0; ns = 0
      }
      BEGIN { enabled = "yes" }
      /^[[:space:]]*#/ { next }
      /^[[:space:]]*$/ { flush(); next }
      {
        key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
        if (key == "types") types = $0
        else if (key == "uris") nu = split($0, uris, " ")
        else if (key == "suites") ns = split($0, suites, " ")
        else if (key == "components") comps = $0
        else if (key == "enabled") enabled = $0
      }
      END { flush() }' "$f"
  done
}
sources="$(host_debian_sources | awk -v s="$suite" '$2 == s || $2 == s "-updates" || $2 == s "-security"' | sort -u)"
mirror="$(awk -v s="$suite" '$2 == s { print $1; exit }' <<<"$sources")"
[[ -n "$mirror" ]] ||
  die "no '$suite' source in the host's apt configuration (/etc/apt/sources.list, sources.list.d): which Debian mirror to use?"
echo "::: Debian mirror: $mirror ($(wc -l <<<"$sources") $suite sources)"

# --- 2. the clean root, from the cache or debootstrap ---------------------------------------------
home="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
cache_dir="${CFLOW_CI_CACHE:-${XDG_CACHE_HOME:-$home/.cache}/cflow-ci}"
point_release="$(grep -h -m1 '^Version:' /var/lib/apt/lists/*_dists_${suite}_InRelease 2>/dev/null | awk '{ print $2; exit }')"
[[ -n "$point_release" ]] || point_release="$(cut -d. -f1 /etc/debian_version)"
tarball="$cache_dir/debootstrap-$suite-$point_release-minbase.tar"
archives="$cache_dir/apt-archives-$suite"
as_root mkdir -p "$cache_dir" "$archives/partial"

root="$(mktemp -d "${TMPDIR:-/tmp}/cflow-deb-root.XXXXXX")"
chmod 0755 "$root"  # it is the root's "/": apt's _apt user must traverse it
mounted=()
# Ends what still runs inside the root (an Xvfb left by an interrupted xvfb-run), by process id,
# unmounts every mount in reverse order, and removes the root only when nothing is mounted in it.
cleanup() {
  local rc=$? pid link i
  set +e
  trap - EXIT INT TERM
  for link in /proc/[0-9]*/root; do
    pid="${link#/proc/}"; pid="${pid%/root}"
    [[ "$(as_root readlink "$link" 2>/dev/null)" == "$root" ]] && as_root kill -KILL "$pid" 2>/dev/null
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    as_root umount "${mounted[i]}" 2>/dev/null || { sleep 1; as_root umount -l "${mounted[i]}"; }
  done
  if awk -v r="$root/" 'index($5 "/", r) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    echo "test-install.sh: something is still mounted under $root: left in place" >&2
  else
    as_root rm -rf --one-file-system "$root"
  fi
  rm -f "$root".*.log
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -f "$tarball" ]]; then
  phase "unpacking the cached $suite root ($(basename "$tarball"))"
  as_root tar -xpf "$tarball" --numeric-owner -C "$root"
  took
else
  phase "debootstrap --variant=minbase $suite from $mirror (not cached: $tarball)"
  as_root debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { tail -30 "$root.debootstrap.log" >&2; rm -f "$root.debootstrap.log"; die "debootstrap failed"; }
  rm -f "$root.debootstrap.log"
  # The host's Debian sources (updates and security too), so the root resolves what the host resolved.
  awk '{ printf "deb %s %s", $1, $2; for (i = 3; i <= NF; i++) printf " %s", $i; print "" }' <<<"$sources" |
    as_root tee "$root/etc/apt/sources.list" >/dev/null
  # Package scripts must not start services in the root.
  printf '#!/bin/sh\nexit 101\n' | as_root tee "$root/usr/sbin/policy-rc.d" >/dev/null
  as_root chmod 0755 "$root/usr/sbin/policy-rc.d"
  as_root cp /etc/resolv.conf "$root/etc/resolv.conf"
  as_root chroot "$root" apt-get update -q >/dev/null
  as_root chroot "$root" apt-get clean
  as_root tar -cpf "$tarball.partial" --numeric-owner -C "$root" .
  as_root mv -f "$tarball.partial" "$tarball"
  # Older keys (a previous point release) are not needed any more.
  for old in "$cache_dir"/debootstrap-"$suite"-*.tar; do
    [[ "$old" == "$tarball" ]] || as_root rm -f "$old"
  done
  took
fi

as_root chmod 0755 "$root"
root_mount() {  # root_mount TARGET-IN-ROOT MOUNT-ARGS...
  local target="$root$1"; shift
  as_root mount "$@" "$target"
  mounted+=("$target")
}
root_mount /proc -t proc proc
root_mount /dev --bind /dev
root_mount /dev/pts --bind /dev/pts
root_mount /var/cache/apt/archives --bind "$archives"
as_root cp /etc/resolv.conf "$root/etc/resolv.conf"

# A command inside the root, with a clean environment.
in_root() {
  as_root chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# --- 3. install with apt --------------------------------------------------------------------------
phase "apt-get install ./cflow-studio.deb in the clean root (dependencies from $mirror)"
in_root apt-get update -q >/dev/null
in_root dpkg-query -W cflow-studio >/dev/null 2>&1 && die "the clean root already has cflow-studio"
packages_before="$(in_root dpkg-query -W -f '${Package}\n' | wc -l)"
as_root cp "$deb" "$root/tmp/cflow-studio.deb"
in_root apt-get install -y -q --no-install-recommends /tmp/cflow-studio.deb >"$root.apt.log" 2>&1 ||
  { tail -40 "$root.apt.log" >&2; rm -f "$root.apt.log"; die "apt-get install of the package failed"; }
rm -f "$root.apt.log"
as_root rm -f "$root/tmp/cflow-studio.deb"
[[ "$(in_root dpkg-query -W -f '${Status}' cflow-studio)" == "install ok installed" ]] ||
  die "cflow-studio is not installed after apt-get install"
echo "    cflow-studio $version installed with $(($(in_root dpkg-query -W -f '${Package}\n' | wc -l) - packages_before - 1)) dependencies"
installed_list="$(in_root dpkg -L cflow-studio)"
took

# Before anything else is installed: every shared library the binaries and the Qt plugins they load
# need is there, so the package's Depends (shlibdeps + the plugins) are complete.
phase "shared libraries of the installed binaries and Qt plugins"
for binary in /usr/bin/cflow /usr/bin/cflow-studio \
              /usr/lib/x86_64-linux-gnu/qt6/plugins/platforms/libqxcb.so \
              /usr/lib/x86_64-linux-gnu/qt6/plugins/platforms/libqoffscreen.so \
              /usr/lib/x86_64-linux-gnu/qt6/plugins/sqldrivers/libqsqlite.so; do
  libs="$(in_root ldd "$binary")" || die "ldd $binary failed (is it installed?)"
  if grep -q 'not found' <<<"$libs"; then
    grep 'not found' <<<"$libs" >&2
    die "$binary needs libraries no dependency of the package brought"
  fi
done
took

# --- 4. run from the installed paths --------------------------------------------------------------
phase "cflow --version, cflow generate (bundled model), cflow scorecard --claim 5 (installed zoo)"
[[ "$(in_root sh -c 'command -v cflow')" == /usr/bin/cflow ]] || die "cflow is not on the PATH as /usr/bin/cflow"
cli_version="$(in_root cflow --version)"
echo "    $cli_version"
grep -qF "${version%%-*}" <<<"$cli_version" || die "cflow --version says '$cli_version', the package is $version"
prompt="Once upon a time"
story="$(in_root cflow generate -p "$prompt" -n 48 --temp 0 --threads 2 2>"$root.gen.log")" ||
  { cat "$root.gen.log" >&2; rm -f "$root.gen.log"; die "cflow generate without MODEL failed in the installed package"; }
rm -f "$root.gen.log"
[[ "$story" == "$prompt"* && ${#story} -gt $((${#prompt} + 40)) ]] ||
  die "cflow generate printed no story after the prompt: '$story'"
echo "    ${story//$'\n'/ }"
scorecard="$(in_root cflow scorecard --quick --claim 5 --threads 2 2>/dev/null)" || die "cflow scorecard --claim 5 failed"
for model in resources/default-model.cflow resources/models/*.cflow; do
  name="$(basename "$model")"
  grep -qF "$name" <<<"$(grep 'method:' <<<"$scorecard")" ||
    die "the installed scorecard did not read /usr/share/cflow-studio/.../$name: $scorecard"
done
grep -qF "Table 4.1 at our scale (trained zoo, /usr/share/cflow-studio/training/RESULTS.md)" <<<"$scorecard" ||
  die "the installed scorecard did not find Table 4.1 in /usr/share/cflow-studio/training/RESULTS.md"
echo "    scorecard: $(grep -m1 '^Claim 5' <<<"$scorecard")"
took

phase "apt-get install xvfb xauth; cflow-studio --self-test under Xvfb"
in_root apt-get install -y -q --no-install-recommends xvfb xauth >"$root.apt.log" 2>&1 ||
  { tail -40 "$root.apt.log" >&2; rm -f "$root.apt.log"; die "apt-get install xvfb xauth failed"; }
rm -f "$root.apt.log"
in_root mkdir -p /tmp/deb-install
in_root install -d -m 0700 /tmp/xdg-runtime  # what a desktop session provides (Qt warns without it)
# X's abstract sockets are shared with the host (one network namespace), which xvfb-run -a inside the
# root cannot see: take a display number that no X server of the host uses.
display=99
while [[ -e "/tmp/.X$display-lock" ]] || grep -q "/tmp/\.X11-unix/X$display\$" /proc/net/unix; do
  display=$((display + 1))
done
in_root env XDG_RUNTIME_DIR=/tmp/xdg-runtime xvfb-run -n "$display" -s "-screen 0 1600x1000x24" cflow-studio --self-test /usr/share/cflow-studio/default-model.cflow \
  --size 1366x768 --screenshot /tmp/deb-install/studio-1366x768.png ||
  die "cflow-studio --self-test failed in the installed package"
shot_dir="${CFLOW_CI_ARTIFACTS:-$repo_root/artifacts}/screenshots/deb-install"
mkdir -p "$shot_dir"
shot="$shot_dir/studio-1366x768.png"
as_root cat "$root/tmp/deb-install/studio-1366x768.png" >"$shot"
shot_bytes="$(stat -c %s "$shot")"
if [[ "$(head -c 8 "$shot" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" || "$shot_bytes" -lt 8192 ]]; then
  die "the installed app's self-test screenshot is not a non-trivial PNG ($shot_bytes bytes)"
fi
echo "    screenshot $shot ($shot_bytes bytes)"
took

# --- 5. purge, and nothing of the package is left ---------------------------------------------------
phase "apt-get remove --purge cflow-studio; checking that each of its $(wc -l <<<"$installed_list") paths is gone"
in_root apt-get remove --purge -y -q cflow-studio >/dev/null
status="$(in_root dpkg-query -W -f '${Status}' cflow-studio 2>/dev/null || true)"
[[ -z "$status" || "$status" == *" not-installed" ]] ||
  die "cflow-studio is '$status' after apt-get remove --purge, not gone"
left=0
while IFS= read -r path; do
  [[ -n "$path" && "$path" != "/." ]] || continue
  if as_root test -e "$root$path" -o -L "$root$path"; then
    # A folder stays when another package owns it too (/usr/bin, the hicolor theme's folders).
    if as_root test -d "$root$path" -a ! -L "$root$path" && in_root dpkg-query -S "$path" >/dev/null 2>&1; then
      continue
    fi
    echo "test-install.sh: left after purge: $path" >&2
    left=1
  fi
done <<<"$installed_list"
[[ "$left" -eq 0 ]] || die "apt-get remove --purge left files of the package behind"
for path in /usr/share/cflow-studio /usr/share/doc/cflow-studio "/usr/share/applications/$app_id.desktop"; do
  as_root test -e "$root$path" && die "left after purge: $path"
done
took

echo "::: Debian install test passed in $((SECONDS - t_start)) s ($(basename "$deb"): $version, $(stat -c %s "$deb") bytes)"
