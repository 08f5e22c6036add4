#!/usr/bin/env bash
# fuzz-openapi.sh runs schemathesis, an OpenAPI-driven fuzzer, against a
# live `ebb serve` (embedded backend, a fresh data directory, an auth file
# with one admin token) from docs/openapi.yaml, and fails when it finds a
# 5xx, a status the spec does not declare for the route, a response whose
# body or Content-Type does not match the spec, or when the server logged
# a panic or exited. `make fuzz` runs it through scripts/with-schemathesis.sh,
# which sets EBB_SCHEMATHESIS:
#
#   scripts/with-schemathesis.sh scripts/fuzz-openapi.sh bin/ebb
#
# FUZZ_OPENAPI_TIME (seconds, default 300) bounds the run; FUZZ_OPENAPI_SEED
# replays one (schemathesis prints the seed it used); FUZZ_OPENAPI_FLAGS
# adds schemathesis flags; FUZZ_OPENAPI_SPEC names another spec file (to
# check that the checks bite, on a copy with a status taken out). POST /v1/admin/backup is left out: it writes a
# checkpoint into any absolute directory it is given, and a fuzzer would
# scatter them over the machine. One worker: CPython 3.11's parser is not
# safe for the threads of several ("AST constructor recursion depth
# mismatch" inside Hypothesis). The server's log is printed on failure.
set -euo pipefail

EBB=$(realpath "${1:-bin/ebb}")
: "${EBB_SCHEMATHESIS:?run through scripts/with-schemathesis.sh, or set EBB_SCHEMATHESIS to the schemathesis program}"
FUZZ_OPENAPI_TIME=${FUZZ_OPENAPI_TIME:-300}
FUZZ_OPENAPI_FLAGS=${FUZZ_OPENAPI_FLAGS:-}
FUZZ_OPENAPI_SPEC=$(realpath "${FUZZ_OPENAPI_SPEC:-$(dirname "$0")/../docs/openapi.yaml}")
root="$(cd "$(dirname "$0")/.." && pwd)"
[[ -x "$EBB" ]] || { echo "fuzz-openapi: $EBB is not an executable; run make build" >&2; exit 1; }

# shellcheck source=lib.sh
source "$root/scripts/lib.sh"
scratch

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf 'tokens:\n  - token: "%s"\n    name: fuzzer\n    scopes: ["admin"]\n' "$token" >"$work/auth.yaml"
chmod 600 "$work/auth.yaml"
port=$(free_port)
"$EBB" serve --addr "127.0.0.1:$port" --data "$work/data" --auth-file "$work/auth.yaml" --log-level info >"$work/serve.log" 2>&1 &
server=$!
if ! wait_port "$server" "$port" 100; then
	echo "fuzz-openapi: ebb serve did not start:" >&2
	cat "$work/serve.log" >&2
	exit 1
fi

seed=()
[[ -n "${FUZZ_OPENAPI_SEED:-}" ]] && seed=(--seed "$FUZZ_OPENAPI_SEED")
status=0
# From the temporary directory, where schemathesis keeps its cache
# (.schemathesis/), so that nothing is left in the checkout.
cd "$work"
# shellcheck disable=SC2086
"$EBB_SCHEMATHESIS" run "$FUZZ_OPENAPI_SPEC" \
	--url "http://127.0.0.1:$port" \
	--header "Authorization: Bearer $token" \
	--checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance \
	--exclude-operation-id adminBackup \
	--max-time "$FUZZ_OPENAPI_TIME" \
	--workers 1 \
	--request-timeout 30 \
	--report-dir "$work/report" \
	--output-sanitize false \
	"${seed[@]}" $FUZZ_OPENAPI_FLAGS || status=$?

if ! kill -0 "$server" 2>/dev/null; then
	echo "fuzz-openapi: ebb serve exited during the run:" >&2
	status=1
elif grep -q 'panic' "$work/serve.log"; then
	echo "fuzz-openapi: ebb serve logged a panic:" >&2
	status=1
fi
if [[ $status -ne 0 ]]; then
	echo "--- ebb serve's log (last 200 lines) ---" >&2
	tail -n 200 "$work/serve.log" >&2
fi
exit "$status"
