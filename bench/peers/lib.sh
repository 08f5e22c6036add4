# lib.sh holds what the peer scripts (listget.sh, turnaround.sh) share,
# sourced by them, never run: need, which stops the script when a tool is
# missing; a work directory, removed at exit together with the processes
# whose ids the script adds to pids; and freeport, a free loopback port.

# need SCRIPT TOOL... exits, naming SCRIPT, when a TOOL is not on PATH.
need() {
	local script=$1 cmd
	shift
	for cmd in "$@"; do
		command -v "$cmd" >/dev/null || { echo "$script: $cmd is missing (apt-get install -y wrk redis-server redis-tools)" >&2; exit 1; }
	done
}

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
