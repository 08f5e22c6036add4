#!/usr/bin/env bash
# with-moto.sh runs a command with EBB_S3_ENDPOINT pointing at an
# S3-compatible endpoint: moto's server mode (PyPI), on which the archive
# tests write, verify and read Parquet objects (archive/s3target).
#
#   scripts/with-moto.sh go test ./archive/s3target/
#
# When EBB_S3_ENDPOINT is already set, the command runs against that
# endpoint as is. Otherwise moto[server] $MOTO_VERSION runs from a virtual
# environment of its own in the user's cache
# (${XDG_CACHE_HOME:-~/.cache}/ebb/moto-VERSION-pyX.Y, EBB_TOOLS_CACHE to
# put it elsewhere), made with pip the first time on a machine (Debian's
# python3-venv is installed with apt-get when missing, see make_venv in
# scripts/lib.sh), so that a fresh clone does not install it again (about
# 24 CPU-seconds); it is started in memory on a free loopback port, and
# stopped when the command ends. The script exits with the command's
# status, and fails (never skips) when moto cannot be installed or
# started. With EBB_TEST_SERVERS_PENDING set (make test), the wait is left
# to scripts/await-test-servers.sh.
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
py="$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)"
cache="${EBB_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ebb}"
venv="$cache/moto-$MOTO_VERSION-py$py"
bin="$venv/bin/moto_server"

# A virtual environment cannot be moved once made, so it is made in place;
# the stamp, written last, says it is whole. Two runs installing at once
# take turns (flock), the second finding the first's stamp.
install_moto() {
	[[ -f "$venv/.installed" ]] && return
	mkdir -p "$cache"
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$venv.lock"
		flock 9
	fi
	if [[ ! -f "$venv/.installed" ]]; then
		make_venv "$venv" with-moto ||
			{ echo "with-moto: no virtual environment for moto; set EBB_S3_ENDPOINT to bring an S3 endpoint"; return 1; }
		"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" || return 1
		[[ -x "$bin" ]] || { echo "with-moto: pip installed moto but $bin is missing"; return 1; }
		touch "$venv/.installed"
	fi
	exec 9>&-
}

# start_moto PORT installs moto when it is missing, then becomes the
# server. It runs in the background (serve_and_run), so under make test a
# first install goes on while go vet runs; its output goes to the server's
# log, printed when it fails.
start_moto() {
	install_moto || exit 1
	exec "$bin" -H 127.0.0.1 -p "$1"
}

wait=30
if [[ ! -f "$venv/.installed" ]]; then
	echo "with-moto: installing moto[server] $MOTO_VERSION into $venv (pip, in the background)" >&2
	wait=600
fi
serve_and_run with-moto moto EBB_S3_ENDPOINT "$wait" start_moto "$@"
