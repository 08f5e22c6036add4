package timeseries

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func newService(t testing.TB, st store.Store, now func() time.Time) (*Service, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	svc, err := New(context.Background(), st, Options{Now: now, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return svc, reg
}

// hourly is an index of 1-hour shards, 10-minute partitions, 24 h
// retention.
var hourly = Config{Name: "ev", TableBucket: time.Hour, PartitionBucket: 10 * time.Minute, Retention: 24 * time.Hour, Runway: 2}

// brief is hourly with 6 h of retention: 9 shards (6 past, the hot one, 2
// ahead) where hourly has 27, for the tests whose point is neither a long
// retention nor many shards. Every shard is a table of the backend: on
// Cassandra its create and its drop are each a schema change that every
// node applies (and a drop flushes the node's dirty tables), which made
// the tables most of this package's time on a three-node cluster.
var brief = func() Config { c := hourly; c.Retention = 6 * time.Hour; return c }()

func mustCreate(t testing.TB, svc *Service, cfg Config) Index {
	t.Helper()
	idx, created, err := svc.Create(context.Background(), cfg)
	if err != nil || !created {
		t.Fatalf("create %s: %v (created %v)", cfg.Name, err, created)
	}
	return idx
}

func TestCreateGetListDelete(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		st := open(t, clk.Now)
		svc, _ := newService(t, st, clk.Now)

		idx := mustCreate(t, svc, brief)
		// Shards from BucketStart(now - 6h) to hot + 2: 6 + 1 + 2 = 9.
		if len(idx.Shards) != 9 {
			t.Fatalf("%d shards, want 9", len(idx.Shards))
		}
		states := map[string]int{}
		for i, sh := range idx.Shards {
			states[sh.State]++
			if i > 0 && !idx.Shards[i-1].Start.Before(sh.Start) {
				t.Fatal("shards not sorted by start")
			}
		}
		if states[StateHot] != 1 || states[StateFuture] != 2 || states[StatePast] != 6 {
			t.Errorf("states %v", states)
		}
		if idx.RunwayRemaining != 3*time.Hour-0 {
			t.Errorf("runway remaining %s, want 3h", idx.RunwayRemaining)
		}

		// Identical: not created again; a table bucket neither a multiple
		// nor a divisor of the old one: refused (layout_test.go changes
		// it).
		if _, created, err := svc.Create(ctx, brief); err != nil || created {
			t.Errorf("identical create: created %v, %v", created, err)
		}
		other := brief
		other.TableBucket = 90 * time.Minute
		if _, _, err := svc.Create(ctx, other); !errors.Is(err, ErrLayoutChange) || !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "table_bucket 1h cannot become 1h30m") {
			t.Errorf("unaligned table bucket: %v, want ErrLayoutChange naming table_bucket", err)
		}

		// An index whose name extends "ev" keeps its own shards apart.
		evx := brief
		evx.Name = "ev_x"
		mustCreate(t, svc, evx)
		got, err := svc.Get(ctx, "ev")
		if err != nil || len(got.Shards) != 9 {
			t.Fatalf("get ev: %d shards, %v", len(got.Shards), err)
		}
		list, err := svc.List(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "ev" || list[1].Name != "ev_x" {
			t.Fatalf("list: %v %v", list, err)
		}

		if err := svc.Delete(ctx, "ev"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Get(ctx, "ev"); !errors.Is(err, store.ErrNotFound) || !errors.Is(err, ErrIndexNotFound) {
			t.Errorf("get after delete: %v", err)
		}
		if err := svc.Delete(ctx, "ev"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		infos, _ := st.Tables(ctx, "ev_")
		for _, info := range infos {
			if _, kind := shardmgr.ParseShardName("ev_x", time.Hour, info.Spec.Name); kind != shardmgr.ShardOf {
				t.Errorf("table %s left after deleting ev", info.Spec.Name)
			}
		}
		if len(infos) != 9 {
			t.Errorf("ev_x has %d shards after deleting ev, want 9", len(infos))
		}
	})
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		svc, _ := newService(t, open(t, nil), nil)
		for name, mut := range map[string]func(*Config){
			"bad name":              func(c *Config) { c.Name = "Ev" },
			"name too long":         func(c *Config) { c.Name = "a234567890123456789012345678901x2" },
			"fractional table":      func(c *Config) { c.TableBucket = 1500 * time.Millisecond },
			"not a multiple":        func(c *Config) { c.PartitionBucket = 7 * time.Minute },
			"zero partition":        func(c *Config) { c.PartitionBucket = 0 },
			"sub-ms partition":      func(c *Config) { c.PartitionBucket = time.Microsecond },
			"zero retention":        func(c *Config) { c.Retention = 0 },
			"negative runway":       func(c *Config) { c.Runway = -1 },
			"too many shards":       func(c *Config) { c.TableBucket = time.Second; c.PartitionBucket = time.Second },
			"negative capacity":     func(c *Config) { c.Capacity.HotWrite = -5 },
			"partition > table":     func(c *Config) { c.PartitionBucket = 2 * time.Hour },
			"sub-ms retention":      func(c *Config) { c.Retention = time.Hour + time.Microsecond },
			"negative table bucket": func(c *Config) { c.TableBucket = -time.Hour },
		} {
			c := hourly
			mut(&c)
			if _, _, err := svc.Create(context.Background(), c); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if list, err := svc.List(context.Background()); err != nil || len(list) != 0 {
			t.Errorf("invalid configs stored: %v %v", list, err)
		}
	})
}

func ev(id, eid string, ts time.Time, payload string) Event {
	return Event{IndexID: id, EventID: eid, Timestamp: ts, Payload: []byte(payload)}
}

func queryAll(t testing.TB, svc *Service, q Query) []Event {
	t.Helper()
	var out []Event
	for pages := 0; ; pages++ {
		if pages > 100000 {
			t.Fatal("paging does not end")
		}
		page, err := svc.Query(context.Background(), "ev", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) > q.Limit {
			t.Fatalf("page of %d events, limit %d", len(page.Events), q.Limit)
		}
		out = append(out, page.Events...)
		if page.NextPageToken == nil {
			return out
		}
		q.PageToken = page.NextPageToken
	}
}

func TestWriteReadRoundTripAndPaging(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, reg := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)

		// Events over the last 5 hours and the next 2 (runway), for two
		// index ids whose names contain the characters encodings trip on.
		rng := rand.New(rand.NewPCG(1, 2))
		ids := []string{"acc_1#a/b\x00c", "acc_1#a/b"}
		var all []Event
		for i := range 600 {
			ts := t0.Add(-5 * time.Hour).Add(time.Duration(rng.Int64N(int64(7 * time.Hour)))).Truncate(time.Millisecond)
			if i%50 == 0 {
				ts = t0.Add(-time.Hour) // several events at one timestamp
			}
			all = append(all, ev(ids[i%2], fmt.Sprintf("e%03d_\x00#/%d", rng.IntN(1000), i), ts, fmt.Sprintf("payload %d", i)))
		}
		n, err := svc.Put(ctx, "ev", all)
		if err != nil || n != len(all) {
			t.Fatalf("put: %d, %v", n, err)
		}
		// Idempotent: the same batch again changes nothing.
		if _, err := svc.Put(ctx, "ev", all); err != nil {
			t.Fatal(err)
		}
		if v := metricValue(t, reg, "ebb_index_events_written_total", "ev"); v != float64(2*len(all)) {
			t.Errorf("events written %v", v)
		}

		want := func(id string, from, to time.Time, desc bool) []Event {
			var out []Event
			for _, e := range all {
				if e.IndexID == id && !e.Timestamp.Before(from) && e.Timestamp.Before(to) {
					out = append(out, e)
				}
			}
			slices.SortFunc(out, func(a, b Event) int {
				return cmp.Or(a.Timestamp.Compare(b.Timestamp), cmp.Compare(a.EventID, b.EventID))
			})
			if desc {
				slices.Reverse(out)
			}
			return out
		}
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{1, 2, 7, 100, 10000} {
				for _, r := range [][2]time.Time{
					{t0.Add(-30 * time.Hour), t0.Add(30 * time.Hour)},
					{t0.Add(-3*time.Hour - 7*time.Minute), t0.Add(-time.Hour + 11*time.Second)},
					{t0.Add(-time.Hour), t0.Add(-time.Hour + time.Millisecond)},
				} {
					got := queryAll(t, svc, Query{IndexID: ids[0], From: r[0], To: r[1], Desc: desc, Limit: limit})
					exp := want(ids[0], r[0], r[1], desc)
					if len(exp) == 0 {
						t.Fatalf("range %v holds no events; the test data is wrong", r)
					}
					if !sameEvents(got, exp) {
						t.Fatalf("desc=%v limit=%d range %v: got %d events, want %d", desc, limit, r, len(got), len(exp))
					}
				}
			}
		}
		// Zero From and To: the whole retention window.
		if got := queryAll(t, svc, Query{IndexID: ids[1], Limit: 50}); !sameEvents(got, want(ids[1], time.Time{}, t0.Add(99*time.Hour), false)) {
			t.Fatalf("unbounded query: %d events", len(got))
		}
	})
}

func sameEvents(a, b []Event) bool {
	return slices.EqualFunc(a, b, func(x, y Event) bool {
		return x.IndexID == y.IndexID && x.EventID == y.EventID && x.Timestamp.Equal(y.Timestamp) && bytes.Equal(x.Payload, y.Payload)
	})
}

func TestExpiryIsExact(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		ts := t0.Add(-5 * time.Hour).Add(123 * time.Millisecond)
		if _, err := svc.Put(ctx, "ev", []Event{ev("a", "old", ts, "x"), ev("a", "new", ts.Add(time.Millisecond), "y")}); err != nil {
			t.Fatal(err)
		}
		count := func() int {
			page, err := svc.Query(ctx, "ev", Query{IndexID: "a", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			return len(page.Events)
		}
		// "old" expires at ts + 6h exactly: live one nanosecond before, gone at.
		clk.Advance(time.Hour + 123*time.Millisecond - time.Nanosecond)
		if n := count(); n != 2 {
			t.Fatalf("1ns before expiry: %d events, want 2", n)
		}
		clk.Advance(time.Nanosecond)
		if n := count(); n != 1 {
			t.Fatalf("at expiry: %d events, want 1", n)
		}
		// Writing an event already expired is refused.
		_, err := svc.Put(ctx, "ev", []Event{ev("a", "late", clk.Now().Add(-6*time.Hour), "z")})
		if !errors.Is(err, ErrExpired) {
			t.Fatalf("expired write: %v", err)
		}
	})
}

func TestBadBatchWritesNothing(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		st := open(t, clk.Now)
		svc, reg := newService(t, st, clk.Now)
		mustCreate(t, svc, brief)
		good := ev("a", "ok", t0, "x")
		for name, c := range map[string]struct {
			bad  Event
			want error
		}{
			"empty index_id":    {ev("", "e", t0, ""), store.ErrInvalid},
			"empty event_id":    {ev("a", "", t0, ""), store.ErrInvalid},
			"long event_id":     {ev("a", string(make([]byte, 257)), t0, ""), store.ErrInvalid},
			"bad utf8":          {ev("a\xff", "e", t0, ""), store.ErrInvalid},
			"before 1970":       {ev("a", "e", time.Unix(-1, 0), ""), store.ErrInvalid},
			"expired":           {ev("a", "e", t0.Add(-7*time.Hour), ""), ErrExpired},
			"beyond the runway": {ev("a", "e", t0.Add(4*time.Hour), ""), ErrNoShard},
			"too large":         {Event{IndexID: "a", EventID: "e", Timestamp: t0, Payload: make([]byte, st.Capabilities().MaxRowBytes)}, store.ErrTooLarge},
		} {
			_, err := svc.Put(ctx, "ev", []Event{good, good, c.bad})
			var ee *store.MutationError
			if !errors.Is(err, c.want) || !errors.As(err, &ee) || ee.Index != 2 {
				t.Errorf("%s: %v, want %v naming event 2", name, err, c.want)
			}
		}
		// 256 bytes is fine.
		if _, err := svc.Put(ctx, "ev", []Event{ev("a", string(bytes.Repeat([]byte{'x'}, 256)), t0, "")}); err != nil {
			t.Fatal(err)
		}
		page, err := svc.Query(ctx, "ev", Query{IndexID: "a", Limit: 10})
		if err != nil || len(page.Events) != 1 {
			t.Fatalf("after refused batches: %d events, %v", len(page.Events), err)
		}
		if _, err := svc.Put(ctx, "ev", make([]Event, MaxBatch+1)); !errors.Is(err, store.ErrTooLarge) {
			t.Errorf("oversize batch: %v", err)
		}
		if _, err := svc.Put(ctx, "nope", []Event{good}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown index: %v", err)
		}
		if v := metricValue(t, reg, "ebb_index_write_refused_total", "ev"); v == 0 {
			t.Error("refusals not counted")
		}
	})
}

func TestQueryValidation(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		svc, _ := newService(t, open(t, clk.Now), clk.Now)
		mustCreate(t, svc, brief)
		if _, err := svc.Put(ctx, "ev", []Event{ev("a", "1", t0, ""), ev("a", "2", t0, "")}); err != nil {
			t.Fatal(err)
		}
		page, err := svc.Query(ctx, "ev", Query{IndexID: "a", Limit: 1})
		if err != nil || page.NextPageToken == nil {
			t.Fatal(err)
		}
		flip := bytes.Clone(page.NextPageToken)
		flip[10] ^= 1 // the bucket no longer matches the timestamp
		for name, q := range map[string]Query{
			"limit -1":           {IndexID: "a", Limit: -1},
			"limit 10001":        {IndexID: "a", Limit: 10001},
			"from == to":         {IndexID: "a", Limit: 1, From: t0, To: t0},
			"from > to":          {IndexID: "a", Limit: 1, From: t0, To: t0.Add(-1)},
			"empty index_id":     {Limit: 1},
			"garbage token":      {IndexID: "a", Limit: 1, PageToken: []byte("garbage")},
			"inconsistent token": {IndexID: "a", Limit: 1, PageToken: flip},
			"token of desc":      {IndexID: "a", Limit: 1, PageToken: page.NextPageToken, Desc: true},
		} {
			if _, err := svc.Query(ctx, "ev", q); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
	})
}

// metricValue reads one series (the first, or the one whose first label
// has value label) from a registry.
func metricValue(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			found = true
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	if !found {
		t.Fatalf("series %s{%s} not found", name, label)
	}
	return total
}

// TestChangeIndex changes an index's retention and runway through Create.
// A longer retention keeps more shards; a shorter one is held: the
// background manager drops nothing more, a plan shows the drops, and only
// an explicit apply makes them and releases the hold.
func TestChangeIndex(t *testing.T) {
	t.Parallel()
	testbackend.EachParallel(t, func(t *testing.T, open testbackend.Factory) {
		ctx := context.Background()
		clk := storetest.NewClock(t0)
		st := open(t, clk.Now)
		svc, _ := newService(t, st, clk.Now)
		mustCreate(t, svc, brief) // 6 h retention: 9 shards
		shards := func() int {
			t.Helper()
			idx, err := svc.Get(ctx, "ev")
			if err != nil {
				t.Fatal(err)
			}
			return len(idx.Shards)
		}

		longer := brief
		longer.Retention, longer.Runway = 12*time.Hour, 3
		idx, created, err := svc.Create(ctx, longer)
		if err != nil || created || idx.Retention != 12*time.Hour || idx.HeldRetention != 0 || idx.Runway != 3 {
			t.Fatalf("longer retention: %+v created=%v %v", idx.Config, created, err)
		}
		// Shards cover the whole retention, so the longer one creates the
		// 6 h before those too: 12 + hot + 3 ahead.
		if n := shards(); n != 16 {
			t.Fatalf("%d shards after a longer retention and runway, want 16", n)
		}

		shorter := longer
		shorter.Retention = 3 * time.Hour
		idx, _, err = svc.Create(ctx, shorter)
		if err != nil || idx.Retention != 3*time.Hour || idx.HeldRetention != 12*time.Hour {
			t.Fatalf("shorter retention: %+v %v", idx.Config, err)
		}
		// The background manager keeps the held retention's shards.
		if err := svc.Manager().RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if n := shards(); n != 16 {
			t.Fatalf("%d shards after a background run, want 16 (nothing dropped before an apply)", n)
		}
		plan, _, err := svc.Reconcile(ctx, "ev", shardmgr.RunOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		drops, deferred := 0, 0
		for _, a := range plan.Actions {
			switch {
			case a.Op == shardmgr.OpDrop && a.Deferred:
				deferred++
			case a.Op == shardmgr.OpDrop:
				drops++
			}
		}
		if drops != 4 || deferred != 5 { // 9 shards expire; at most 4 drops per run
			t.Fatalf("plan has %d drops and %d deferred, want 4 and 5 (the guard's limit per run)", drops, deferred)
		}
		if _, _, err := svc.Reconcile(ctx, "ev", shardmgr.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		idx, err = svc.Get(ctx, "ev")
		if err != nil || idx.HeldRetention != 0 || len(idx.Shards) != 12 {
			t.Fatalf("after apply: held %s, %d shards, %v; want no hold and 12 shards", idx.HeldRetention, len(idx.Shards), err)
		}
		// Released: the background manager now drops the rest.
		for range 10 {
			if err := svc.Manager().RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := shards(); n != 3+1+3 {
			t.Fatalf("%d shards once released, want 7", n)
		}
	})
}
