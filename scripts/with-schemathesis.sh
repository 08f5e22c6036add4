#!/usr/bin/env bash
# with-schemathesis.sh runs a command with EBB_SCHEMATHESIS naming the
# `schemathesis` program (PyPI), the OpenAPI-driven fuzzer `make fuzz` runs
# against a live `ebb serve` (scripts/fuzz-openapi.sh).
#
#   scripts/with-schemathesis.sh scripts/fuzz-openapi.sh bin/ebb
#
# When EBB_SCHEMATHESIS is already set, the command runs with it as is.
# Otherwise schemathesis $SCHEMATHESIS_VERSION is installed with pip into a
# virtual environment under tools/schemathesis/venv the first time (the
# directory ignores itself in git), and reused after. It needs python3 (3.9
# or later) with its venv module; Debian's python3-venv is installed with
# apt-get, as root or through sudo, when it is missing. The script fails
# (never skips), saying why, when schemathesis cannot be installed.
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

if [[ -n "${EBB_SCHEMATHESIS:-}" ]]; then
	exec "$@"
fi

SCHEMATHESIS_VERSION=4.32.5
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/tools/schemathesis/venv"
st="$venv/bin/schemathesis"

if [[ ! -x "$st" ]] || [[ "$("$venv/bin/python" -m pip show schemathesis 2>/dev/null | sed -n 's/^Version: //p')" != "$SCHEMATHESIS_VERSION" ]]; then
	if ! command -v python3 >/dev/null 2>&1; then
		echo "with-schemathesis: python3 is missing; install it (apt-get install python3 python3-venv), or set EBB_SCHEMATHESIS" >&2
		exit 1
	fi
	rm -rf "$venv"
	mkdir -p "$(dirname "$venv")"
	if ! python3 -m venv "$venv" >/dev/null 2>&1; then
		rm -rf "$venv"
		# Debian splits ensurepip out of python3.
		sudo=()
		if [[ "$(id -u)" -ne 0 ]]; then
			if ! command -v sudo >/dev/null 2>&1; then
				echo "with-schemathesis: python3 cannot make a virtual environment; install python3-venv as root, or set EBB_SCHEMATHESIS" >&2
				exit 1
			fi
			sudo=(sudo -n)
		fi
		if ! command -v apt-get >/dev/null 2>&1; then
			echo "with-schemathesis: python3 cannot make a virtual environment and there is no apt-get to install python3-venv" >&2
			exit 1
		fi
		echo "with-schemathesis: installing python3-venv (apt-get install)" >&2
		if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv >&2; then
			"${sudo[@]}" apt-get update >&2
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv >&2
		fi
		python3 -m venv "$venv"
	fi
	# The environment is machine-local: keep it out of git.
	echo '*' >"$venv/.gitignore"
	echo "with-schemathesis: installing schemathesis $SCHEMATHESIS_VERSION (pip)" >&2
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2
	if [[ ! -x "$st" ]]; then
		echo "with-schemathesis: pip installed schemathesis but $st is missing" >&2
		exit 1
	fi
fi

EBB_SCHEMATHESIS="$st"
export EBB_SCHEMATHESIS
exec "$@"
