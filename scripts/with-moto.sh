#!/usr/bin/env bash
# with-moto.sh runs a command with EBB_S3_ENDPOINT pointing at an
# S3-compatible endpoint: moto's server mode (PyPI), on which the archive
# tests write, verify and read Parquet objects (archive/s3target).
#
#   scripts/with-moto.sh go test ./archive/s3target/
#
# When EBB_S3_ENDPOINT is already set, the command runs against that
# endpoint as is. Otherwise moto[server] $MOTO_VERSION is installed with
# pip into a virtual environment under tools/moto/venv the first time, by
# the background process that then becomes the server (the
# directory ignores itself in git; Debian's python3-venv is installed with
# apt-get when missing, see make_venv in scripts/lib.sh), started in
# memory on a free loopback port, and stopped when the command ends. The
# script exits with the command's status, and fails (never skips) when
# moto cannot be installed or started. With EBB_TEST_SERVERS_PENDING set
# (make test), the wait is left to scripts/await-test-servers.sh.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

if [[ -n "${EBB_S3_ENDPOINT:-}" ]]; then
	exec "$@"
fi

MOTO_VERSION=5.2.5
venv="$root/tools/moto/venv"
bin="$venv/bin/moto_server"

installed() {
	[[ -x "$bin" ]] &&
		[[ "$("$venv/bin/python" -m pip show moto 2>/dev/null | sed -n 's/^Version: //p')" == "$MOTO_VERSION" ]]
}

# start_moto PORT installs moto when it is missing, then becomes the
# server. It runs in the background (serve_and_run), so under make test a
# first install (about 30 s of one core: the environment, then pip) goes
# on while go vet runs instead of before it; its output goes to the
# server's log, printed when it fails.
start_moto() {
	if ! installed; then
		make_venv "$venv" with-moto ||
			{ echo "with-moto: no virtual environment for moto; set EBB_S3_ENDPOINT to bring an S3 endpoint"; exit 1; }
		"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" || exit 1
		[[ -x "$bin" ]] || { echo "with-moto: pip installed moto but $bin is missing"; exit 1; }
	fi
	exec "$bin" -H 127.0.0.1 -p "$1"
}

wait=30
if ! installed; then
	echo "with-moto: installing moto[server] $MOTO_VERSION (pip, in the background)" >&2
	wait=600
fi
serve_and_run with-moto moto EBB_S3_ENDPOINT "$wait" start_moto "$@"
