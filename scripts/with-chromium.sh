#!/usr/bin/env bash
# with-chromium.sh runs a command with EBB_CHROMIUM naming a headless-capable
# Chromium, which the dashboard's browser tests (server/ui) drive.
#
#   scripts/with-chromium.sh go test ./server/ui/
#
# When EBB_CHROMIUM is already set, the command runs with it as is.
# Otherwise chromium is taken from PATH, and when it is missing Debian's
# chromium package is installed with apt-get, as root or through sudo. The
# script fails (never skips), saying why, when Chromium cannot be found or
# installed.
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

if [[ -n "${EBB_CHROMIUM:-}" ]]; then
	exec "$@"
fi

find_chromium() {
	command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}

bin="$(find_chromium)"
if [[ -z "$bin" ]]; then
	sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "with-chromium: chromium is missing; install Debian's chromium package (apt-get install chromium) as root, or set EBB_CHROMIUM" >&2
			exit 1
		fi
		sudo=(sudo -n)
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "with-chromium: chromium is missing and there is no apt-get to install it; install Chromium and put it on PATH, or set EBB_CHROMIUM" >&2
		exit 1
	fi
	echo "with-chromium: installing chromium (apt-get install chromium)" >&2
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2; then
		"${sudo[@]}" apt-get update >&2
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2
	fi
	bin="$(find_chromium)"
	if [[ -z "$bin" ]]; then
		echo "with-chromium: apt-get installed chromium but it is not on PATH" >&2
		exit 1
	fi
fi

# A browser that cannot start headless would fail every test in the same
# obscure way; say so here instead.
if ! "$bin" --headless --no-sandbox --disable-gpu --dump-dom about:blank >/dev/null 2>&1; then
	echo "with-chromium: $bin does not start headless:" >&2
	"$bin" --headless --no-sandbox --disable-gpu --dump-dom about:blank >&2 || true
	exit 1
fi

EBB_CHROMIUM="$bin"
export EBB_CHROMIUM
exec "$@"
