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
# shellcheck source=lib.sh
source "$root/scripts/lib.sh"

if [[ ! -x "$st" ]] || [[ "$("$venv/bin/python" -m pip show schemathesis 2>/dev/null | sed -n 's/^Version: //p')" != "$SCHEMATHESIS_VERSION" ]]; then
	if ! make_venv "$venv" with-schemathesis; then
		echo "with-schemathesis: no virtual environment for schemathesis; set EBB_SCHEMATHESIS to bring one" >&2
		exit 1
	fi
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
