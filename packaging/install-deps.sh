#!/usr/bin/env bash
# Installs what building cflow studio needs on Debian 12 (packaging/debian-build-deps.txt), with
# sudo when not root and directly as root (containers often have no sudo).
#   packaging/install-deps.sh            the build dependencies
#   packaging/install-deps.sh --tests    also npm and the openai npm package of the server's client
#                                        test (tests/server/openai-node, pinned by its package-lock.json)
#                                        stunnel4, and dbus + gnome-keyring for the keychain test
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
with_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    *) echo "install-deps.sh: unknown option '$arg' (only --tests)" >&2; exit 2 ;;
  esac
done

as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

export DEBIAN_FRONTEND=noninteractive
as_root apt-get update
# shellcheck disable=SC2046  # one package name per word, on purpose
as_root apt-get install -y $(grep -v '^#' "$repo_root/packaging/debian-build-deps.txt")

if [[ "$with_tests" -eq 1 ]]; then
  # Debian's npm is a package of its own; a Node from elsewhere (nodesource) brings npm with it
  # and conflicts with Debian's, so install it only where the command is missing.
  if ! command -v npm >/dev/null 2>&1; then
    as_root apt-get install -y npm
  fi
  # TLS in front of `cflow serve` for the remote-endpoint tests (tests/remote/tls_stunnel_test.cpp).
  as_root apt-get install -y stunnel4
  # A private Secret Service for the keychain test (tests/ui/run_with_secret_service.sh, issue 34).
  as_root apt-get install -y dbus gnome-keyring
  npm ci --prefix "$repo_root/tests/server/openai-node" --no-audit --no-fund
  npm ci --prefix "$repo_root/tests/server/anthropic-node" --no-audit --no-fund
  npm ci --prefix "$repo_root/tests/engine/schema-node" --no-audit --no-fund
  npm ci --prefix "$repo_root/tests/ui/mcp-node" --no-audit --no-fund
fi
