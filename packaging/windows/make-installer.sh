#!/usr/bin/env bash
# Makes the NSIS installer (installer.nsi, Debian's makensis) from an install tree: writes the
# installer's file list and the uninstaller's from the tree itself, so the uninstaller deletes exactly
# what was installed and leaves anything a user put beside it.
#
#   packaging/windows/make-installer.sh STAGE OUT.exe [ICON.ico]
#     STAGE  the tree to install into $INSTDIR (bin\..., share\cflow-studio\...; build.sh makes it)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() { echo "make-installer.sh: $*" >&2; exit 1; }
[[ $# -ge 2 && $# -le 3 && -d "$1" ]] || die "usage: make-installer.sh STAGE OUT.exe [ICON.ico]"
stage="$(realpath "$1")"
out="$(realpath -m "$2")"
command -v makensis >/dev/null 2>&1 || die "makensis is not installed (apt-get install nsis)"

lists="$(mktemp -d "${TMPDIR:-/tmp}/cflow-nsis.XXXXXX")"
trap 'rm -rf "$lists"' EXIT
# NSIS paths use backslashes; a folder's files follow a SetOutPath to it.
(
  cd "$stage"
  find . -type d | sed 's|^\./\?||' | sort | while IFS= read -r dir; do
    files="$(find "./$dir" -maxdepth 1 -type f | sort)"
    [[ -n "$files" ]] || continue
    printf 'SetOutPath "$INSTDIR%s"\n' "${dir:+\\${dir//\//\\}}"
    while IFS= read -r f; do printf 'File "%s"\n' "$stage/${f#./}"; done <<<"$files"
  done
) >"$lists/files.nsh"
(
  cd "$stage"
  find . -type f | sed 's|^\./||' | sort | while IFS= read -r f; do printf 'Delete "$INSTDIR\\%s"\n' "${f//\//\\}"; done
  # Folders deepest first, so each is empty when its turn comes.
  find . -mindepth 1 -type d | sed 's|^\./||' | awk -F/ '{ print NF "\t" $0 }' | sort -rn | cut -f2 |
    while IFS= read -r d; do printf 'RMDir "$INSTDIR\\%s"\n' "${d//\//\\}"; done
) >"$lists/unfiles.nsh"

version="$(sed -n 's/^project(cflow_studio VERSION \([0-9.]*\).*/\1/p' "$repo_root/CMakeLists.txt")"
[[ -n "$version" ]] || die "no project version in CMakeLists.txt"
icon=()
[[ -n "${3:-}" ]] && icon=(-DICON="$(realpath -e "$3")")
mkdir -p "$(dirname "$out")"
makensis -V2 -NOCD -DVERSION="$version" -DSTAGE="$stage" -DFILES="$lists" -DOUTFILE="$out" \
  -DSIZE_KB="$(du -sk "$stage" | cut -f1)" "${icon[@]}" "$repo_root/packaging/windows/installer.nsi" ||
  die "makensis failed"
