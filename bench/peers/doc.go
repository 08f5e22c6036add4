// Package peers benchmarks ebb beside the stores users compare it with,
// in one run on one machine, so that each figure has its yardstick next to
// it. It is a module of its own so that ebb's module never depends on a
// peer's client.
//
//	cd bench/peers && go test -run '^$' -bench . -benchtime 5s
//
// The Redis benchmarks start a private redis-server (Debian's redis-server
// package) on a free loopback port and are skipped when it is not on PATH.
// listget.sh beside this file runs the same comparison with wrk and
// redis-benchmark against `ebb serve`.
package peers
