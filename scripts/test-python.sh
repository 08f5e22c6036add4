#!/usr/bin/env bash
# test-python.sh runs the Python client's tests (clients/python/tests),
# which build ebb into a temporary directory and start `ebb serve` on
# loopback ports themselves (`make test-python`).
#
#   scripts/test-python.sh [pytest args...]
#
# It needs python3 (3.10 or later) with its venv module (Debian's
# python3-venv is installed with apt-get when missing, see make_venv in
# lib.sh) and PyPI: the client is installed with its test extras (httpx,
# msgpack, pytest, PyYAML) into a virtual environment under
# tools/python/venv, made the first time (the directory ignores itself in
# git) and reused after. The client itself is installed anew on every run,
# as `pip install ./clients/python` installs it (with its build backend,
# hatchling, kept in the environment), so the tests exercise the package
# and not the source tree. GO names the go command (default go).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/tools/python/venv"
# shellcheck source=lib.sh
source "$root/scripts/lib.sh"

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
	echo "test-python: the Python client needs python3 3.10 or later; found $(python3 --version 2>&1 || echo none)" >&2
	exit 1
fi
if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
	make_venv "$venv" test-python
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
# The build backend lives in the environment: building in an isolated one
# each run would cost the run its largest share.
"$venv/bin/python" -c 'import hatchling' 2>/dev/null || "${pip[@]}" hatchling
# pip installs a directory anew every time.
"${pip[@]}" --no-build-isolation "$root/clients/python[test]"

# From the client's directory, whose src/ layout keeps the source tree off
# sys.path; no cache left in the checkout.
cd "$root/clients/python"
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
