#!/usr/bin/env bash
# with-promtool.sh runs a command with EBB_PROMTOOL naming Prometheus's
# promtool, which the tests of docs/prometheus/alerts.yml run.
#
#   scripts/with-promtool.sh go test -run TestAlertRules ./cmd/ebb/
#
# When EBB_PROMTOOL is already set, the command runs with it as is.
# Otherwise promtool is taken from PATH, and when it is missing Debian's
# prometheus package (which ships it) is installed with apt-get, as root or
# through sudo. The script fails (never skips), saying why, when promtool
# cannot be found or installed.
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

if [[ -n "${EBB_PROMTOOL:-}" ]]; then
	exec "$@"
fi

if ! command -v promtool >/dev/null 2>&1; then
	sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "with-promtool: promtool is missing; install Debian's prometheus package (apt-get install prometheus) as root, or set EBB_PROMTOOL" >&2
			exit 1
		fi
		sudo=(sudo -n)
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "with-promtool: promtool is missing and there is no apt-get to install it; install Prometheus's promtool and put it on PATH, or set EBB_PROMTOOL" >&2
		exit 1
	fi
	echo "with-promtool: installing promtool (apt-get install prometheus)" >&2
	# The package's service is not wanted, only its promtool: invoke-rc.d
	# asks policy-rc.d, and RUNLEVEL=1 keeps a sysvinit script from
	# starting the server where there is no systemd.
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y --no-install-recommends prometheus >&2; then
		"${sudo[@]}" apt-get update >&2
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y --no-install-recommends prometheus >&2
	fi
	if ! command -v promtool >/dev/null 2>&1; then
		echo "with-promtool: apt-get installed prometheus but promtool is not on PATH" >&2
		exit 1
	fi
fi

EBB_PROMTOOL="$(command -v promtool)"
export EBB_PROMTOOL
exec "$@"
