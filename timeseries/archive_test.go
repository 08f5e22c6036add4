package timeseries

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ebb-data/ebb/archive"
	"github.com/ebb-data/ebb/archive/archivetest"
	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

type archiveFixture struct {
	svc      *Service
	reg      *prometheus.Registry
	st       store.Store
	clk      *storetest.Clock
	dir, loc string
	faults   archivetest.Faults
	// log is the service's log; the service logs only within the calls
	// the test makes, so the test reads it between them.
	log bytes.Buffer
}

func newArchiveFixture(t *testing.T, open testbackend.Factory) *archiveFixture {
	t.Helper()
	f := &archiveFixture{clk: storetest.NewClock(t0), dir: t.TempDir(), reg: prometheus.NewRegistry()}
	f.loc = (&url.URL{Scheme: "file", Path: filepath.ToSlash(f.dir)}).String()
	f.st = open(t, f.clk.Now)
	// Every backend lists a table's partitions, so every one archives.
	if _, ok := store.As[store.PartitionLister](f.st); !ok {
		t.Fatalf("the %s backend lists no partitions, so it cannot archive", f.st.Capabilities().Backend)
	}
	svc, err := New(context.Background(), f.st, Options{Now: f.clk.Now, Registerer: f.reg, Logger: slog.New(slog.NewTextHandler(&f.log, nil)),
		ArchiveOpen: archivetest.Opener(archive.OpenFile, &f.faults)})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	cfg := brief
	cfg.Archive = &ArchiveConfig{To: f.loc}
	mustCreate(t, svc, cfg)
	return f
}

// oldShard is the shard [t0-5h, t0-4h), which expires at t0+2h.
var oldShard = shardmgr.ShardName("ev", t0.Add(-5*time.Hour))

// fill writes n events into oldShard, over three index IDs, and returns
// them.
func (f *archiveFixture) fill(t *testing.T, n int) []Event {
	t.Helper()
	var evs []Event
	for i := range n {
		e := Event{IndexID: fmt.Sprintf("acct%d", i%3), EventID: fmt.Sprintf("e%05d", i),
			Timestamp: t0.Add(-5*time.Hour + time.Duration(i)*time.Second)}
		if i%7 != 0 {
			e.Payload = []byte(fmt.Sprintf("payload %d %s", i, strings.Repeat("x", i%50)))
		}
		evs = append(evs, e)
	}
	for chunk := range slices.Chunk(evs, 1000) {
		if _, err := f.svc.WriteEvents(context.Background(), "ev", chunk); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}

func (f *archiveFixture) exists(t *testing.T, table string) bool {
	t.Helper()
	_, err := f.st.Spec(context.Background(), table)
	if err != nil && !errors.Is(err, store.ErrTableNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// heldReason is the reason of the plan's held drop of table; "" when the
// drop is not held.
func (f *archiveFixture) heldReason(t *testing.T, table string) string {
	t.Helper()
	plan, _, err := f.svc.Reconcile(context.Background(), "ev", shardmgr.RunOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range plan.Actions {
		if a.Op == shardmgr.OpDrop && a.Table == table {
			if strings.Contains(a.Reason, "held") {
				return a.Reason
			}
			return ""
		}
	}
	t.Fatalf("no drop of %s planned: %v", table, plan)
	return ""
}

func sortByID(evs []Event) {
	slices.SortFunc(evs, func(a, b Event) int {
		return strings.Compare(a.IndexID+"/"+a.EventID, b.IndexID+"/"+b.EventID)
	})
}

// archivedEvents reads the events of table's archive back from its
// Parquet object.
func (f *archiveFixture) archivedEvents(t *testing.T, table string) (archive.Manifest, []Event) {
	t.Helper()
	ctx := context.Background()
	ms, err := f.svc.Archives(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m archive.Manifest) bool { return m.Table == table })
	if i < 0 {
		t.Fatalf("no archive of %s among %d", table, len(ms))
	}
	var evs []Event
	err = f.svc.arch.ReadRows(ctx, ms[i], func(v []any) error {
		e := Event{IndexID: v[0].(string), Timestamp: v[2].(time.Time), EventID: v[3].(string)}
		if v[4] != nil {
			e.Payload = v[4].([]byte)
		}
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ms[i], evs
}

// sameSorted fails unless got and want hold the same events, in any
// order.
func sameSorted(t *testing.T, got, want []Event) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	sortByID(got)
	sortByID(want)
	if !sameEvents(got, want) {
		t.Fatalf("%d events, want %d, or they differ", len(got), len(want))
	}
}

// TestArchiveBeforeDrop: an expired shard of an index with an archive is
// written as Parquet, verified, listed, and only then dropped; the rows
// read back from the object are the shard's, on every backend.
func TestArchiveBeforeDrop(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		f := newArchiveFixture(t, open)
		evs := f.fill(t, 2500)
		f.clk.Set(t0.Add(2 * time.Hour))
		if err := f.svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if f.exists(t, oldShard) {
			t.Fatalf("%s not dropped: %s", oldShard, f.heldReason(t, oldShard))
		}
		m, got := f.archivedEvents(t, oldShard)
		sameSorted(t, got, evs)
		if m.Rows != int64(len(evs)) || m.Verified.IsZero() || m.ObjectSHA256 == "" || m.RowsSHA256 == "" {
			t.Errorf("manifest %+v", m)
		}
		if !m.MinTime.Equal(evs[0].Timestamp) || !m.MaxTime.Equal(evs[len(evs)-1].Timestamp) {
			t.Errorf("time range %s..%s, want %s..%s", m.MinTime, m.MaxTime, evs[0].Timestamp, evs[len(evs)-1].Timestamp)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "ev", oldShard+".parquet")); err != nil {
			t.Error(err)
		}
		if n := testutil.ToFloat64(f.svc.arch.Metrics().Rows); n < float64(len(evs)) {
			t.Errorf("rows written %v", n)
		}
	})
}

// TestArchiveCorruptObjectHoldsDrop: an object that does not read back as
// written holds the drop, which the plan, the metrics and the log say,
// while writes go on, until an archive verifies.
func TestArchiveCorruptObjectHoldsDrop(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		f := newArchiveFixture(t, open)
		f.fill(t, 500)
		f.faults.Corrupt.Store(true)
		f.clk.Set(t0.Add(2 * time.Hour))
		if err := f.svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if !f.exists(t, oldShard) {
			t.Fatal("dropped with a corrupt archive")
		}
		if r := f.heldReason(t, oldShard); !strings.Contains(r, "checksum") {
			t.Fatalf("held drop's reason %q", r)
		}
		if n := testutil.ToFloat64(f.svc.arch.Metrics().Failures); n < 1 {
			t.Errorf("failures %v", n)
		}
		if got := gaugeValue(t, f.reg, "ebb_shard_drops_held"); got < 1 {
			t.Errorf("held drops %v", got)
		}
		for _, line := range []string{`msg="archive of shard failed; its drop is held"`, `msg="shard drop held"`} {
			if !strings.Contains(f.log.String(), line+" index=ev table="+oldShard) {
				t.Errorf("the log has no %s for %s:\n%s", line, oldShard, f.log.String())
			}
		}
		// Writes go on while the drop is held.
		if _, err := f.svc.WriteEvents(ctx, "ev", []Event{{IndexID: "acct0", EventID: "now", Timestamp: f.clk.Now()}}); err != nil {
			t.Fatalf("a write while a drop is held: %v", err)
		}
		f.faults.Corrupt.Store(false)
		if err := f.svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if f.exists(t, oldShard) {
			t.Fatalf("still held once the archive verifies: %s", f.heldReason(t, oldShard))
		}
		if got := gaugeValue(t, f.reg, "ebb_shard_drops_held"); got != 0 {
			t.Errorf("held drops %v after the drop", got)
		}
	})
}

// TestArchiveResumesAfterKill: an archive killed between its object and
// its manifest, or half-way through its object, holds the drop, and the
// next run writes the object again and drops the shard.
func TestArchiveResumesAfterKill(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		f := newArchiveFixture(t, open)
		evs := f.fill(t, 800)
		f.faults.KillManifests.Store(2) // both expired shards
		f.clk.Set(t0.Add(2 * time.Hour))
		if err := f.svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if !f.exists(t, oldShard) {
			t.Fatal("dropped without a manifest")
		}
		object := filepath.Join(f.dir, "ev", oldShard+".parquet")
		if _, err := os.Stat(object); err != nil {
			t.Fatalf("the killed archive left no object: %v", err)
		}
		// Killed half-way through its object as well: a truncated file.
		b, err := os.ReadFile(object)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(object, b[:len(b)/3], 0o644); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if f.exists(t, oldShard) {
			t.Fatalf("not dropped on resume: %s", f.heldReason(t, oldShard))
		}
		_, got := f.archivedEvents(t, oldShard)
		sameSorted(t, got, evs)
	})
}

// TestRestoreArchive: an archived shard restored is read by queries,
// whatever its age, refuses writes, is kept by the shard manager, and is
// gone again once released.
func TestRestoreArchive(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		f := newArchiveFixture(t, open)
		evs := f.fill(t, 300)
		f.clk.Set(t0.Add(2 * time.Hour))
		if err := f.svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if f.exists(t, oldShard) {
			t.Fatal("not dropped")
		}
		query := func() []Event {
			t.Helper()
			var out []Event
			for _, id := range []string{"acct0", "acct1", "acct2"} {
				q := Query{IndexID: id, Limit: 1000}
				for {
					p, err := f.svc.QueryEvents(ctx, "ev", q)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, p.Events...)
					if p.NextPageToken == nil {
						break
					}
					q.PageToken = p.NextPageToken
				}
			}
			return out
		}
		if got := query(); len(got) != 0 {
			t.Fatalf("%d events of a dropped shard", len(got))
		}
		if _, err := f.svc.RestoreArchive(ctx, "ev", oldShard+"x"); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("restore of a name not a shard: %v", err)
		}
		r, err := f.svc.RestoreArchive(ctx, "ev", oldShard)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Complete || r.Rows != int64(len(evs)) {
			t.Errorf("restored %+v", r)
		}
		sameSorted(t, query(), evs)
		// Writes into it are refused: its time is past retention.
		if _, err := f.svc.WriteEvents(ctx, "ev", []Event{{IndexID: "acct0", EventID: "late", Timestamp: evs[0].Timestamp}}); !errors.Is(err, ErrExpired) {
			t.Errorf("write into a restored shard: %v", err)
		}
		// The manager keeps it, and says why.
		if err := f.svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if !f.exists(t, oldShard) {
			t.Fatal("a restored shard was dropped")
		}
		if r := f.heldReason(t, oldShard); !strings.Contains(r, "restored") {
			t.Errorf("held drop's reason %q", r)
		}
		rs, err := f.svc.RestoredShards(ctx, "ev")
		if err != nil || len(rs) != 1 || rs[0].Table != oldShard {
			t.Fatalf("restored shards %+v, %v", rs, err)
		}
		if err := f.svc.ReleaseArchive(ctx, "ev", oldShard); err != nil {
			t.Fatal(err)
		}
		if f.exists(t, oldShard) {
			t.Fatal("released shard still exists")
		}
		if got := query(); len(got) != 0 {
			t.Fatalf("%d events after the release", len(got))
		}
		if err := f.svc.ReleaseArchive(ctx, "ev", oldShard); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second release: %v", err)
		}
	})
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
