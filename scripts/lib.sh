# lib.sh holds what the scripts that start test servers share. Source it;
# it defines functions only.

# free_port prints a free loopback port: bind port 0 and read what the
# kernel picked. The port is released before the server binds it; a
# collision in between makes the server fail to start, which wait_port
# reports.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null && return
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

# running PID succeeds while process PID runs: it exists and has not
# exited. A server started in the background by a script that has since
# ended is no child of ours; once killed it stays a zombie until whatever
# adopted it reaps it, which here (the container's init) takes up to a
# second or two. A zombie holds no memory, ports or open files, so it
# counts as gone. Without /proc, kill -0 alone decides.
running() {
	local stat
	kill -0 "$1" 2>/dev/null || return 1
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
	stat="${stat##*) }"
	[[ "${stat:0:1}" != Z ]]
}

# wait_port PID PORT TENTHS waits up to TENTHS tenths of a second for the
# process PID to accept connections on loopback PORT. It fails at once
# when the process exits, and when the time is up.
wait_port() {
	local pid=$1 port=$2 tenths=$3
	for _ in $(seq 1 "$tenths"); do
		if ! running "$pid"; then
			return 1
		fi
		# A connection accepted on the port means it is serving.
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# use_vegeta ROOT NAME puts vegeta (github.com/tsenart/vegeta, the load
# generator of bench/overload) on PATH, installing the pinned version into
# ROOT/bin with `go install` when it is on neither. NAME prefixes the
# message.
use_vegeta() {
	local root=$1 name=$2 version=v12.12.0
	command -v vegeta >/dev/null 2>&1 && return
	if [[ ! -x "$root/bin/vegeta" ]]; then
		echo "$name: installing vegeta $version into bin/ (go install)" >&2
		GOBIN="$root/bin" go install "github.com/tsenart/vegeta/v12@$version"
	fi
	PATH="$root/bin:$PATH"
}

# scratch sets work to a fresh temporary directory and server to none, and
# at exit stops the process whose PID is in server (when set) and removes
# work: the scaffolding of the scripts that run `ebb serve` for a while.
scratch() {
	work=$(mktemp -d)
	server=
	trap scratch_cleanup EXIT
}

scratch_cleanup() {
	[[ -n "$server" ]] && { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
	rm -rf "$work"
}

# make_venv DIR NAME makes a fresh Python virtual environment in DIR with
# python3's venv module, which ignores itself in git. Debian splits
# ensurepip out of python3: when the module cannot make one, Debian's
# python3-venv is installed with apt-get, as root or through sudo. It fails,
# saying why (NAME prefixes the message), when none can be made.
make_venv() {
	local venv=$1 name=$2
	if ! command -v python3 >/dev/null 2>&1; then
		echo "$name: python3 is missing; install it (apt-get install python3 python3-venv)" >&2
		return 1
	fi
	rm -rf "$venv"
	mkdir -p "$(dirname "$venv")"
	if ! python3 -m venv "$venv" >/dev/null 2>&1; then
		rm -rf "$venv"
		local sudo=()
		if [[ "$(id -u)" -ne 0 ]]; then
			if ! command -v sudo >/dev/null 2>&1; then
				echo "$name: python3 cannot make a virtual environment; install python3-venv as root" >&2
				return 1
			fi
			sudo=(sudo -n)
		fi
		if ! command -v apt-get >/dev/null 2>&1; then
			echo "$name: python3 cannot make a virtual environment and there is no apt-get to install python3-venv" >&2
			return 1
		fi
		echo "$name: installing python3-venv (apt-get install)" >&2
		if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv >&2; then
			"${sudo[@]}" apt-get update >&2
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-venv >&2
		fi
		python3 -m venv "$venv" || return 1
	fi
	# The environment is machine-local: keep it out of git.
	echo '*' >"$venv/.gitignore"
}

# serve_and_run NAME LABEL VAR SECONDS START COMMAND... is the body of the
# with-*.sh scripts that start one HTTP test server (dynalite, DynamoDB
# Local, moto): it calls the function START with a free loopback port in
# the background, its output in a temporary log (START must exec the
# server, so that its PID is the server's), waits up to SECONDS for it
# (start_wait: deferred under make test), exports
# VAR=http://127.0.0.1:PORT, runs COMMAND and exits with its status. The
# server is stopped and the log removed when the script exits, by signal
# too. NAME (the script's name) prefixes the messages and LABEL names the
# server in them.
serve_and_run() {
	local name=$1 label=$2 var=$3 seconds=$4 start=$5
	shift 5
	local port endpoint status=0
	serve_name="$name: $label"
	port="$(free_port)"
	serve_log="$(mktemp -t "${name#with-}.XXXXXX.log")"
	"$start" "$port" >"$serve_log" 2>&1 &
	serve_pid=$!
	trap serve_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	endpoint="http://127.0.0.1:$port"
	if ! start_wait "$name: $label" "$serve_pid" "$port" "$seconds" "$serve_log"; then
		exit 1
	fi
	echo "$name: $label on $endpoint" >&2
	export "$var=$endpoint"
	serve_running=1
	"$@" || status=$?
	exit "$status"
}

# serve_cleanup stops the server serve_and_run started and removes its log.
# A server that is already gone once the command has run exited while it
# ran (the tests against it then fail with refused connections): its exit
# status and the end of its log are printed first, so that the run says
# why. (One that never served has had its log printed by await_server.)
serve_cleanup() {
	local st=0
	if kill -0 "$serve_pid" 2>/dev/null; then
		kill "$serve_pid" 2>/dev/null || true
		wait "$serve_pid" 2>/dev/null || true
	elif [[ -n "${serve_running:-}" ]]; then
		wait "$serve_pid" 2>/dev/null || st=$?
		echo "${serve_name:-server}: exited before the command ended (status $st); the end of its log:" >&2
		tail -n 40 "$serve_log" >&2 2>/dev/null || true
	fi
	rm -f "$serve_log"
}

# Deferred waits. When EBB_TEST_SERVERS_PENDING names a file (make test
# sets it), the with-*.sh scripts that start a server do not wait for it:
# each exports its endpoint and runs its command at once, so that the
# servers of a chain of them boot at the same time, and while `make check`
# vets, and scripts/await-test-servers.sh, which check runs before the
# tests, waits for them all. Unset, each script waits for its own server
# before it runs its command.

# defer_wait NAME PID PORT SECONDS LOGS [LINE...] records in the file
# EBB_TEST_SERVERS_PENDING the wait that await_server would do, and
# succeeds; without that file it fails, and the caller waits itself.
defer_wait() {
	[[ -n "${EBB_TEST_SERVERS_PENDING:-}" ]] || return 1
	local arg line=""
	for arg in "$@"; do
		line+="$(printf '%q' "$arg") "
	done
	echo "$line" >>"$EBB_TEST_SERVERS_PENDING"
}

# start_wait NAME PID PORT SECONDS LOGS [LINE...] defers the wait for a
# server (defer_wait) when EBB_TEST_SERVERS_PENDING is set, and otherwise
# waits for it now (await_server).
start_wait() {
	defer_wait "$@" || await_server "$@"
}

# await_server NAME PID PORT SECONDS LOGS [LINE...] waits up to SECONDS
# for the process PID to accept connections on loopback PORT, with each
# LINE (a fixed string) in the first of the colon-separated files LOGS. It
# fails at once when the process exits, and when the time is up, printing
# LOGS.
await_server() {
	local name=$1 pid=$2 port=$3 seconds=$4 logs=$5
	shift 5
	local log=${logs%%:*} start=$SECONDS line ready
	while ((SECONDS - start < seconds)); do
		if ! running "$pid"; then
			echo "$name exited before it served on 127.0.0.1:$port:" >&2
			print_logs "$logs"
			return 1
		fi
		ready=1
		for line in "$@"; do
			grep -qF "$line" "$log" 2>/dev/null || { ready=""; break; }
		done
		# A connection accepted on the port means it is serving.
		if [[ -n "$ready" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "$name did not serve on 127.0.0.1:$port within ${seconds}s:" >&2
	print_logs "$logs"
	return 1
}

# print_logs LOGS prints each of the colon-separated files LOGS to stderr.
print_logs() {
	local f files
	IFS=: read -ra files <<<"$1"
	for f in "${files[@]}"; do
		cat "$f" >&2 2>/dev/null || true
	done
}
