#!/usr/bin/env bash
# await-test-servers.sh waits for the test servers whose with-*.sh scripts
# deferred their wait (EBB_TEST_SERVERS_PENDING, see scripts/lib.sh), and
# fails, printing the server's log, when one of them does not start. It
# does nothing when EBB_TEST_SERVERS_PENDING is unset.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$root/scripts/lib.sh"

pending="${EBB_TEST_SERVERS_PENDING:-}"
[[ -n "$pending" && -f "$pending" ]] || exit 0
start=$SECONDS
while IFS= read -r line; do
	[[ -n "$line" ]] || continue
	eval "args=($line)"
	# shellcheck disable=SC2154 # args is set by the eval.
	await_server "${args[@]}" || exit 1
	echo "await-test-servers: ${args[0]} serving on 127.0.0.1:${args[2]}" >&2
done <"$pending"
echo "await-test-servers: every server serving, after a wait of $((SECONDS - start))s" >&2
