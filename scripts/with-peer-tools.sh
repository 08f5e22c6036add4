#!/usr/bin/env bash
# with-peer-tools.sh runs a command with the tools the peer benchmarks
# (bench/peers) drive on PATH: wrk, redis-server, redis-benchmark and
# redis-cli.
#
#   scripts/with-peer-tools.sh bench/peers/listget.sh bin/ebb
#
# A missing tool is installed from Debian's packages (wrk, redis-server,
# redis-tools) with apt-get, as root or through sudo; the package's Redis
# service is not started. The script fails (never skips), saying why, when
# a tool cannot be found or installed.
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

# tool:package pairs.
need=(wrk:wrk redis-server:redis-server redis-benchmark:redis-tools redis-cli:redis-tools)
missing=()
for pair in "${need[@]}"; do
	tool=${pair%%:*} pkg=${pair#*:}
	if ! command -v "$tool" >/dev/null 2>&1 && [[ " ${missing[*]} " != *" $pkg "* ]]; then
		missing+=("$pkg")
	fi
done

if [[ ${#missing[@]} -gt 0 ]]; then
	sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then
		if ! command -v sudo >/dev/null 2>&1; then
			echo "with-peer-tools: missing ${missing[*]}; install them as root (apt-get install ${missing[*]})" >&2
			exit 1
		fi
		sudo=(sudo -n)
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "with-peer-tools: missing ${missing[*]} and there is no apt-get to install them; put wrk, redis-server, redis-benchmark and redis-cli on PATH" >&2
		exit 1
	fi
	echo "with-peer-tools: installing ${missing[*]} (apt-get install)" >&2
	# Only the programs are wanted, not the Redis service: invoke-rc.d
	# asks policy-rc.d, and RUNLEVEL=1 keeps a sysvinit script from
	# starting the server where there is no systemd.
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
		"${sudo[@]}" apt-get update >&2
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y --no-install-recommends "${missing[@]}" >&2
	fi
	for pair in "${need[@]}"; do
		tool=${pair%%:*}
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "with-peer-tools: apt-get installed ${missing[*]} but $tool is not on PATH" >&2
			exit 1
		fi
	done
fi

exec "$@"
