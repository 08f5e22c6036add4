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
//
// Run ingests the same events into ebb's time-sharded index, Badger with a
// per-entry TTL and raw Pebble, with the same batch size and sync setting,
// then expires all of them as each store does it best (ebb drops its
// shards, Badger compacts and collects its value log once the TTL has
// passed, raw Pebble deletes the range and compacts it), measuring rows/s,
// the seconds until the data's space is freed and the directory's size
// before and after; cmd/ingest-expire prints it as Markdown tables.
// cmd/ingest-latency measures write latency under steady ingest over HTTP
// against `ebb serve`, beside the server's own engine and garbage-collector
// metrics; cmd/ingest-null stands in for the server, answering as it does
// at a fixed CPU cost a request, to measure the floor the load generator
// and the machine give beside it. `make bench-peers` at the top of the repository runs
// ingest-expire and listget.sh.
package peers
