#!/bin/sh
# Runs a test command inside a private D-Bus session with its own GNOME Keyring (a Secret Service),
# unlocked with a throw-away password, in a throw-away home: KeychainSecretStore's test talks to a
# real keychain and never to the user's. Without dbus-run-session or gnome-keyring-daemon
# (packaging/install-deps.sh --tests installs dbus and gnome-keyring) the command still runs and
# the keychain test skips, saying why.
#   run_with_secret_service.sh cflow_ui_tests --gtest_filter=KeychainSecretStore.*
set -u
missing=""
for tool in dbus-run-session gnome-keyring-daemon; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  CFLOW_SECRET_SERVICE_MISSING="not installed:$missing (apt-get install dbus gnome-keyring)" "$@"
  exit $?
fi
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
mkdir -m 700 "$home/run"
HOME="$home" XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" XDG_RUNTIME_DIR="$home/run" \
  dbus-run-session -- sh -c '
    if printf %s cflow-test-keyring | gnome-keyring-daemon --unlock --components=secrets >"$HOME/keyring.log" 2>&1; then
      export CFLOW_TEST_SECRET_SERVICE=1
    else
      export CFLOW_SECRET_SERVICE_MISSING="gnome-keyring-daemon did not start: $(cat "$HOME/keyring.log")"
    fi
    "$@"' sh "$@"
