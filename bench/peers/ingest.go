package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ebb-data/ebb/timeseries"
)

// Workload is the ingest-and-expire workload: the same events, batch size
// and sync setting for every store.
type Workload struct {
	// Events is how many events are ingested, in Batch-sized writes.
	Events int
	Batch  int
	// Writers is how many goroutines write batches at once, each its
	// share of the batches in order; 1 writes them one after the other.
	Writers int
	// Payload is the payload bytes of each event (random letters).
	Payload int
	// IDs is how many index ids (accounts) the events are spread over.
	IDs int
	// Sync makes every write durable before it is acknowledged.
	Sync bool
	// TTL is each event's time to live in Badger, whose expiry runs on
	// the wall clock only: the expiry phase starts when it has passed for
	// the last event written. ebb's clock is moved past its retention
	// instead, and raw Pebble has no expiry of its own.
	TTL time.Duration
	// ReclaimTimeout bounds how long the expiry phase waits for the disk
	// to be freed.
	ReclaimTimeout time.Duration
	// Poll is how often the directory's size is taken meanwhile.
	Poll time.Duration
}

// DefaultWorkload is what `make bench-peers` runs.
func DefaultWorkload() Workload {
	return Workload{Events: 1_000_000, Batch: 1000, Writers: 1, Payload: 100, IDs: 100,
		TTL: 2 * time.Second, ReclaimTimeout: 30 * time.Second, Poll: 50 * time.Millisecond}
}

// Validate reports the first invalid field.
func (w Workload) Validate() error {
	switch {
	case w.Events < 1, w.Batch < 1, w.Writers < 1, w.IDs < 1, w.Payload < 0:
		return errors.New("peers: events, batch, writers and ids must be positive, payload not negative")
	case w.Batch > timeseries.MaxBatch:
		return fmt.Errorf("peers: batch %d is over ebb's %d", w.Batch, timeseries.MaxBatch)
	case w.TTL <= 0, w.ReclaimTimeout <= 0, w.Poll <= 0:
		return errors.New("peers: ttl, reclaim timeout and poll must be positive")
	}
	return nil
}

// events returns the workload's events: time-ordered over the 20 hours
// before now, round-robin over the index ids, each with its own payload.
func (w Workload) events(now time.Time) []timeseries.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	payloads := make([]byte, w.Events*w.Payload)
	for i := range payloads {
		payloads[i] = byte('a' + rng.IntN(26))
	}
	span := 20 * time.Hour
	first := now.Add(-span)
	out := make([]timeseries.Event, w.Events)
	for i := range out {
		out[i] = timeseries.Event{
			IndexID:   fmt.Sprintf("account-%04d", i%w.IDs),
			EventID:   fmt.Sprintf("event-%010d", i),
			Timestamp: first.Add(span / time.Duration(w.Events) * time.Duration(i)).Truncate(time.Millisecond),
			Payload:   payloads[i*w.Payload : (i+1)*w.Payload : (i+1)*w.Payload],
		}
	}
	return out
}

// peer is one store under the workload. write is called from
// Workload.Writers goroutines at once; the other methods from one.
type peer interface {
	// write writes one batch, durably when the workload says Sync.
	write(batch []timeseries.Event) error
	// expiredAt is the wall-clock moment by which everything written has
	// expired, or the zero time for a store told when to expire.
	expiredAt() time.Time
	// reclaim is one step of expiring everything written; it is called
	// again while the directory's size is polled, until the disk is
	// freed or the time is up.
	reclaim(ctx context.Context) error
	// isLog reports whether a file of the store's directory is a
	// write-ahead log the store keeps and reuses once its memtable is
	// flushed: its blocks stay allocated whatever is deleted, so they are
	// left out when telling whether the data's space was freed.
	isLog(name string) bool
	close() error
}

// Peer names, in the order they run within a round.
const (
	PeerEbb    = "ebb"
	PeerBadger = "badger"
	PeerPebble = "pebble"
)

var peerOpeners = map[string]func(ctx context.Context, dir string, w Workload) (peer, error){
	PeerEbb:    openEbb,
	PeerBadger: openBadger,
	PeerPebble: openRawPebble,
}

// Result is one store's run of the workload.
type Result struct {
	Peer  string `json:"peer"`
	Sync  bool   `json:"sync"`
	Round int    `json:"round"`
	Rows  int    `json:"rows"`
	// IngestSeconds is the time of all writes; RowsPerSecond follows.
	IngestSeconds float64 `json:"ingest_seconds"`
	RowsPerSecond float64 `json:"rows_per_second"`
	// EmptyBytes is the directory's size (du) once the store was open,
	// before any event; BeforeBytes once every event was written;
	// AfterBytes when the expiry phase ended; ClosedBytes once the store
	// was closed after it. AfterLogBytes is the part of AfterBytes taken
	// by the write-ahead logs the store keeps for reuse (see peer.isLog).
	EmptyBytes    int64 `json:"empty_bytes"`
	BeforeBytes   int64 `json:"before_bytes"`
	AfterBytes    int64 `json:"after_bytes"`
	AfterLogBytes int64 `json:"after_log_bytes"`
	ClosedBytes   int64 `json:"closed_bytes"`
	// Freed says whether the data's space was freed within the reclaim
	// timeout: the directory, less the write-ahead logs kept for reuse,
	// came back to within a tenth of what the ingest had added.
	// FreeSeconds is how long that took from the moment everything had
	// expired, or the timeout when it was not freed.
	Freed       bool    `json:"freed"`
	FreeSeconds float64 `json:"free_seconds"`
}

// Run runs the workload rounds times on every named store, unsynced and
// synced as asked, each run on a fresh directory under dir. Within a round
// the stores run back to back, so that a machine whose speed drifts
// weighs on all of them. progress receives a line per run.
func Run(ctx context.Context, w Workload, peers []string, syncs []bool, rounds int, dir string, progress io.Writer) ([]Result, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	for _, p := range peers {
		if peerOpeners[p] == nil {
			return nil, fmt.Errorf("peers: unknown store %q (want %s, %s or %s)", p, PeerEbb, PeerBadger, PeerPebble)
		}
	}
	events := w.events(time.Now())
	var out []Result
	for round := 1; round <= rounds; round++ {
		for _, synced := range syncs {
			w := w
			w.Sync = synced
			for _, name := range peers {
				r, err := runOne(ctx, w, name, events, filepath.Join(dir, fmt.Sprintf("%s-%d-%t", name, round, synced)))
				if err != nil {
					return out, fmt.Errorf("%s, round %d, %s: %w", name, round, syncName(synced), err)
				}
				r.Round = round
				out = append(out, r)
				freed := fmt.Sprintf("freed in %.2f s", r.FreeSeconds)
				if !r.Freed {
					freed = fmt.Sprintf("not freed in %.0f s", r.FreeSeconds)
				}
				fmt.Fprintf(progress, "round %d, %s, %s: %.0f rows/s; %s; %s before, %s after (%s of kept logs), %s once closed\n",
					round, syncName(synced), name, r.RowsPerSecond, freed, mb(r.BeforeBytes), mb(r.AfterBytes), mb(r.AfterLogBytes), mb(r.ClosedBytes))
			}
		}
	}
	return out, nil
}

func runOne(ctx context.Context, w Workload, name string, events []timeseries.Event, dir string) (r Result, err error) {
	r = Result{Peer: name, Sync: w.Sync, Rows: len(events)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	p, err := peerOpeners[name](ctx, dir, w)
	if err != nil {
		return r, err
	}
	closed := false
	defer func() {
		if !closed {
			err = errors.Join(err, p.close())
		}
	}()
	if r.EmptyBytes, _, err = du(dir, p.isLog); err != nil {
		return r, err
	}

	start := time.Now()
	if err := ingest(p, events, w); err != nil {
		return r, fmt.Errorf("ingest: %w", err)
	}
	r.IngestSeconds = time.Since(start).Seconds()
	r.RowsPerSecond = float64(len(events)) / r.IngestSeconds
	if r.BeforeBytes, _, err = du(dir, p.isLog); err != nil {
		return r, err
	}

	// Expiry starts when everything has expired: at once for a store
	// told to expire, after the TTL for one that expires by the clock.
	if at := p.expiredAt(); !at.IsZero() {
		if err := sleepUntil(ctx, at); err != nil {
			return r, err
		}
	}
	threshold := r.EmptyBytes + (r.BeforeBytes-r.EmptyBytes)/10
	start = time.Now()
	deadline := start.Add(w.ReclaimTimeout)
	for {
		if err := p.reclaim(ctx); err != nil {
			return r, fmt.Errorf("expire: %w", err)
		}
		if r.AfterBytes, r.AfterLogBytes, err = du(dir, p.isLog); err != nil {
			return r, err
		}
		if r.AfterBytes-r.AfterLogBytes <= threshold {
			r.Freed = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		if err := sleepUntil(ctx, time.Now().Add(w.Poll)); err != nil {
			return r, err
		}
	}
	r.FreeSeconds = time.Since(start).Seconds()
	closed = true
	if err := p.close(); err != nil {
		return r, err
	}
	if r.ClosedBytes, _, err = du(dir, nil); err != nil {
		return r, err
	}
	return r, nil
}

// ingest writes events in batches from w.Writers goroutines, writer k
// taking batches k, k+Writers, ...; it returns when all are done.
func ingest(p peer, events []timeseries.Event, w Workload) error {
	errs := make([]error, w.Writers)
	var wg sync.WaitGroup
	for k := range w.Writers {
		wg.Go(func() {
			for i := k * w.Batch; i < len(events); i += w.Writers * w.Batch {
				if err := p.write(events[i:min(i+w.Batch, len(events))]); err != nil {
					errs[k] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sleepUntil waits for the wall clock to reach t, or for ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// du is the disk space the files under dir take, as du(1) counts it:
// allocated blocks, so that a preallocated or sparse file counts for what
// it really holds; logs is the part taken by the files isLog names.
func du(dir string, isLog func(name string) bool) (total, logs int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // removed by the store while walking
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		n := allocated(info)
		total += n
		if isLog != nil && isLog(d.Name()) {
			logs += n
		}
		return nil
	})
	return total, logs, err
}

func syncName(sync bool) string {
	if sync {
		return "synced"
	}
	return "unsynced"
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

// WriteTable prints one Markdown table per sync setting: for each store
// the median over the rounds of its rows/s, of its ratio to Badger's and
// to raw Pebble's rows/s in the same round, of the seconds until the disk
// was freed, and of its sizes.
func WriteTable(out io.Writer, results []Result, w Workload) {
	for _, synced := range []bool{false, true} {
		byPeer := map[string][]Result{}
		var order []string
		for _, r := range results {
			if r.Sync != synced {
				continue
			}
			if byPeer[r.Peer] == nil {
				order = append(order, r.Peer)
			}
			byPeer[r.Peer] = append(byPeer[r.Peer], r)
		}
		if len(order) == 0 {
			continue
		}
		rounds := len(byPeer[order[0]])
		fmt.Fprintf(out, "\n%d events of %d bytes in batches of %d from %d writer(s), %s; the median of %d rounds\n\n",
			w.Events, w.Payload, w.Batch, w.Writers, syncName(synced), rounds)
		fmt.Fprintln(out, "| store | rows/s | ÷ Badger | ÷ raw Pebble | seconds until the data's space is freed | du before | du after | of which kept logs | du once closed |")
		fmt.Fprintln(out, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
		ratio := func(rs []Result, base string) string {
			bs := byPeer[base]
			if len(bs) != len(rs) {
				return "—"
			}
			q := make([]float64, len(rs))
			for i := range rs {
				q[i] = rs[i].RowsPerSecond / bs[i].RowsPerSecond
			}
			return fmt.Sprintf("%.2f", median(q))
		}
		for _, name := range order {
			rs := byPeer[name]
			col := func(f func(Result) float64) float64 {
				v := make([]float64, len(rs))
				for i, r := range rs {
					v[i] = f(r)
				}
				return median(v)
			}
			freed := 0
			for _, r := range rs {
				if r.Freed {
					freed++
				}
			}
			free := fmt.Sprintf("%.2f", col(func(r Result) float64 { return r.FreeSeconds }))
			if freed < len(rs) {
				free = fmt.Sprintf("not freed within %.0f s in %d of %d rounds", w.ReclaimTimeout.Seconds(), len(rs)-freed, len(rs))
			}
			fmt.Fprintf(out, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", name,
				col(func(r Result) float64 { return r.RowsPerSecond }), ratio(rs, PeerBadger), ratio(rs, PeerPebble), free,
				mb(int64(col(func(r Result) float64 { return float64(r.BeforeBytes) }))),
				mb(int64(col(func(r Result) float64 { return float64(r.AfterBytes) }))),
				mb(int64(col(func(r Result) float64 { return float64(r.AfterLogBytes) }))),
				mb(int64(col(func(r Result) float64 { return float64(r.ClosedBytes) }))))
		}
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ParsePeers splits a comma-separated list of store names.
func ParsePeers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
