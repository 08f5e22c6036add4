// Package main is the ingest-expire command, which ingests the same events
// into ebb's time-sharded index, Badger with a per-entry TTL and raw
// Pebble, then expires all of them as each store does it best, and prints
// rows/s, the seconds until the disk was freed and the bytes before and
// after, as Markdown tables whose ratios are taken within each round.
//
//	cd bench/peers && go run ./cmd/ingest-expire -rounds 3
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/ebb-data/ebb/bench/peers"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ingest-expire:", err)
		os.Exit(1)
	}
}

func run() error {
	w := peers.DefaultWorkload()
	flag.IntVar(&w.Events, "events", w.Events, "events to ingest into each store")
	flag.IntVar(&w.Batch, "batch", w.Batch, "events per write")
	flag.IntVar(&w.Writers, "writers", w.Writers, "goroutines writing batches at once")
	flag.IntVar(&w.Payload, "payload", w.Payload, "payload bytes per event")
	flag.IntVar(&w.IDs, "ids", w.IDs, "index ids the events are spread over")
	flag.DurationVar(&w.TTL, "ttl", w.TTL, "Badger's per-entry TTL")
	flag.DurationVar(&w.ReclaimTimeout, "reclaim-timeout", w.ReclaimTimeout, "how long to wait for the disk to be freed")
	rounds := flag.Int("rounds", 3, "rounds; the tables hold the medians")
	stores := flag.String("stores", "ebb,badger,pebble", "stores to run, in order")
	sync := flag.String("sync", "both", "sync setting: off, on or both")
	dir := flag.String("dir", "", "directory for the stores (default: a temporary one)")
	asJSON := flag.Bool("json", false, "print every run as JSON instead of the tables")
	flag.Parse()

	var syncs []bool
	switch *sync {
	case "off":
		syncs = []bool{false}
	case "on":
		syncs = []bool{true}
	case "both":
		syncs = []bool{false, true}
	default:
		return fmt.Errorf("-sync %q: want off, on or both", *sync)
	}
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", *rounds)
	}
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "ebb-peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := peers.Run(ctx, w, peers.ParsePeers(*stores), syncs, *rounds, *dir, os.Stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	peers.WriteTable(os.Stdout, results, w)
	return nil
}
