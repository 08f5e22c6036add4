package cqllegacy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ebb-data/ebb/migrate"
	"github.com/ebb-data/ebb/migrate/cqllegacy"
	"github.com/ebb-data/ebb/migrate/migratetest"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql"
	"github.com/ebb-data/ebb/store/cql/cqltest"
	"github.com/ebb-data/ebb/store/storetest"
	"github.com/ebb-data/ebb/timeseries"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// createTable creates a table in st's keyspace as an application would
// have, and returns its "keyspace.table" name.
func createTable(t *testing.T, st *cql.Store, name, columns string) string {
	t.Helper()
	ctx := t.Context()
	s := st.Session()
	if err := s.Query(fmt.Sprintf(`CREATE TABLE %q.%q %s`, st.Keyspace(), name, columns)).ExecContext(ctx); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	// The table is made through the Store's own session, whose schema
	// wait is its own (store/cql), on the node that ran the CREATE.
	return st.Keyspace() + "." + name
}

// TestEndToEndCassandra migrates an index off a Cassandra table of
// events, clustered newest first as such tables often are, with native
// TTLs.
func TestEndToEndCassandra(t *testing.T) {
	clock := storetest.NewClock(time.Now().Truncate(time.Millisecond))
	st := cqltest.New(t, clock.Now)
	table := createTable(t, st, "legacy_events", `(account text, ts timestamp, event_id text, body blob,
		PRIMARY KEY ((account), ts, event_id)) WITH CLUSTERING ORDER BY (ts DESC, event_id DESC)`)
	migratetest.Run(t, migratetest.Env{
		Store: st,
		Clock: clock,
		Legacy: migrate.LegacyConfig{Kind: migrate.KindCQL, Table: table, Mapping: &migrate.Mapping{
			IndexID: "account", SortKey: "ts", EventID: "event_id", Payload: "body",
		}},
		Open: func(ctx context.Context, cfg migrate.LegacyConfig) (migrate.Source, error) {
			return cqllegacy.Open(ctx, st.Client(), cfg, cqllegacy.Options{})
		},
		Events: migratetest.Events(t, 10000),
		IDs:    20,
	})
}

// layouts are the table shapes a mapping fits, each with the mapping.
var layouts = []struct {
	name, columns string
	m             migrate.Mapping
}{
	{"ts_event_clustering", `(id text, ts timestamp, ev text, p blob, PRIMARY KEY ((id), ts, ev))`,
		migrate.Mapping{IndexID: "id", SortKey: "ts", EventID: "ev", Payload: "p"}},
	{"ts_desc_bigint", `(id text, ts bigint, ev text, p text, PRIMARY KEY ((id), ts, ev)) WITH CLUSTERING ORDER BY (ts DESC, ev DESC)`,
		migrate.Mapping{IndexID: "id", SortKey: "ts", SortKeyFormat: migrate.SortTimestampMs, EventID: "ev", Payload: "p"}},
	{"ts_event_regular", `(id text, ts timestamp, ev text, p blob, other int, PRIMARY KEY ((id), ts))`,
		migrate.Mapping{IndexID: "id", SortKey: "ts", EventID: "ev", Payload: "p", TTL: "ev"}},
	{"text_sort_key", `(id text, sk text, p blob, PRIMARY KEY ((id), sk))`,
		migrate.Mapping{IndexID: "id", SortKey: "sk", Payload: "p"}},
	{"text_sort_key_desc", `(id text, sk text, p blob, PRIMARY KEY ((id), sk)) WITH CLUSTERING ORDER BY (sk DESC)`,
		migrate.Mapping{IndexID: "id", SortKey: "sk", SortKeyFormat: migrate.SortTimestampEventID, Payload: "p"}},
}

// TestLayouts writes rows through each layout's mapping and reads them
// back: in order both ways, by pages of every size, within bounds, with
// their TTLs; a scan by pages sees each row once.
func TestLayouts(t *testing.T) {
	st := cqltest.New(t, nil)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			ctx := t.Context()
			cfg := migrate.LegacyConfig{Kind: migrate.KindCQL, Table: createTable(t, st, l.name, l.columns), Mapping: &l.m}
			src, err := cqllegacy.Open(ctx, st.Client(), cfg, cqllegacy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = src.Close() }()
			now := time.Now()
			base := now.Add(-time.Hour).Truncate(time.Millisecond)
			oneEventPerMs := l.name == "ts_event_regular"
			var rows []migrate.Row
			for i := range 120 {
				// Several events share a millisecond where the layout
				// allows it; event ids do not follow timestamps.
				ts := base.Add(time.Duration(i/3) * time.Millisecond)
				if oneEventPerMs {
					ts = base.Add(time.Duration(i) * time.Millisecond)
				}
				rows = append(rows, migrate.Row{
					Event:     timeseries.Event{IndexID: fmt.Sprintf("id%d", i%2), EventID: fmt.Sprintf("e%03d", (i*37)%120), Timestamp: ts, Payload: []byte(fmt.Sprintf("p%d", i))},
					ExpiresAt: now.Add(time.Duration(1+i%5) * time.Hour),
				})
			}
			// A row already expired is not written.
			gone := migrate.Row{Event: timeseries.Event{IndexID: "id0", EventID: "gone", Timestamp: base, Payload: []byte("x")}, ExpiresAt: now.Add(-time.Second)}
			if err := src.Write(ctx, append(slices.Clone(rows), gone)); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"id0", "id1"} {
				var want []migrate.Row
				for _, r := range rows {
					if r.IndexID == id {
						want = append(want, r)
					}
				}
				slices.SortFunc(want, func(a, b migrate.Row) int {
					if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
						return c
					}
					return cmpString(a.EventID, b.EventID)
				})
				for _, desc := range []bool{false, true} {
					w := slices.Clone(want)
					if desc {
						slices.Reverse(w)
					}
					for _, limit := range []int{1, 7, 1000} {
						got := readAll(t, src, migrate.Range{IndexID: id, Lo: 0, Hi: now.Add(time.Hour).UnixMilli(), Desc: desc, Limit: limit}, now)
						checkRows(t, fmt.Sprintf("%s desc=%v limit=%d", id, desc, limit), got, w, now)
					}
				}
				// Bounds: [lo, hi) on timestamps.
				lo, hi := want[10].Timestamp, want[30].Timestamp
				var inside []migrate.Row
				for _, r := range want {
					if !r.Timestamp.Before(lo) && r.Timestamp.Before(hi) {
						inside = append(inside, r)
					}
				}
				got := readAll(t, src, migrate.Range{IndexID: id, Lo: lo.UnixMilli(), Hi: hi.UnixMilli(), Limit: 4}, now)
				checkRows(t, id+" within bounds", got, inside, now)
				// A clock ahead of the cluster's hides rows whose TTL
				// has passed by it.
				later := now.Add(150 * time.Minute)
				got = readAll(t, src, migrate.Range{IndexID: id, Lo: 0, Hi: now.Add(time.Hour).UnixMilli(), Limit: 1000}, later)
				n := 0
				for _, r := range want {
					if r.ExpiresAt.After(later.Add(time.Second)) {
						n++
					}
				}
				if len(got) < n || len(got) > n+len(want)/5 {
					t.Fatalf("%s at now+150m: %d rows live, want about %d", id, len(got), n)
				}
			}
			// Scan by pages: every row once.
			seen := map[string]int{}
			var cursor []byte
			for pages := 0; ; pages++ {
				page, next, units, err := src.Scan(ctx, cursor, 25)
				if err != nil {
					t.Fatal(err)
				}
				if units != float64(len(page)) || len(page) > 25 {
					t.Fatalf("scan page of %d rows, %v units", len(page), units)
				}
				for _, r := range page {
					seen[r.IndexID+"/"+r.EventID]++
				}
				if next == nil {
					break
				}
				if pages > 100 {
					t.Fatal("scan does not end")
				}
				cursor = next
			}
			if len(seen) != len(rows) {
				t.Fatalf("scan saw %d rows, want %d", len(seen), len(rows))
			}
			for k, n := range seen {
				if n != 1 {
					t.Fatalf("scan saw %s %d times", k, n)
				}
			}
			if n, err := src.Estimate(ctx); err != nil || n != int64(len(rows)) {
				t.Fatalf("estimate %d, %v; want %d", n, err, len(rows))
			}
		})
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readAll reads r by pages, resuming after the last row of each.
func readAll(t *testing.T, src migrate.Source, r migrate.Range, now time.Time) []migrate.Row {
	t.Helper()
	var all []migrate.Row
	for range 1000 {
		page, more, err := src.Query(t.Context(), r, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > r.Limit {
			t.Fatalf("%d rows for limit %d", len(page), r.Limit)
		}
		all = append(all, page...)
		if !more {
			return all
		}
		last := page[len(page)-1]
		r.After = &timeseries.Position{Timestamp: last.Timestamp, EventID: last.EventID}
	}
	t.Fatal("query does not end")
	return nil
}

// checkRows compares rows read with those written: same events in the
// same order, and an expiry read back within a second of the one written.
func checkRows(t *testing.T, label string, got, want []migrate.Row, now time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", label, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.IndexID != w.IndexID || g.EventID != w.EventID || !g.Timestamp.Equal(w.Timestamp) || string(g.Payload) != string(w.Payload) {
			t.Fatalf("%s: row %d is %s/%s@%s %q, want %s/%s@%s %q", label, i, g.IndexID, g.EventID, g.Timestamp, g.Payload, w.IndexID, w.EventID, w.Timestamp, w.Payload)
		}
		// Never early; late by the rounding of the write's TTL and of the
		// read's second (a second each) and the round trips between.
		if d := g.ExpiresAt.Sub(w.ExpiresAt); d < 0 || d > 5*time.Second {
			t.Fatalf("%s: row %d expires %s, written to expire %s", label, i, g.ExpiresAt, w.ExpiresAt)
		}
	}
}

// TestOpenChecksSchema refuses tables the mapping does not fit, saying
// why, and never touches them.
func TestOpenChecksSchema(t *testing.T) {
	st := cqltest.New(t, nil)
	ctx := t.Context()
	good := migrate.Mapping{IndexID: "id", SortKey: "ts", EventID: "ev", Payload: "p"}
	cases := []struct {
		name, columns string
		m             migrate.Mapping
	}{
		{"missing", "", good},
		{"two_part_pk", `(id text, b text, ts timestamp, ev text, p blob, PRIMARY KEY ((id, b), ts, ev))`, good},
		{"int_pk", `(id int, ts timestamp, ev text, p blob, PRIMARY KEY ((id), ts, ev))`, good},
		{"ts_not_first", `(id text, ts timestamp, ev text, p blob, PRIMARY KEY ((id), ev, ts))`, good},
		{"mixed_order", `(id text, ts timestamp, ev text, p blob, PRIMARY KEY ((id), ts, ev)) WITH CLUSTERING ORDER BY (ts DESC, ev ASC)`, good},
		{"extra_clustering", `(id text, ts timestamp, ev text, x int, p blob, PRIMARY KEY ((id), ts, ev, x))`, good},
		{"no_event", `(id text, ts timestamp, p blob, PRIMARY KEY ((id), ts))`, migrate.Mapping{IndexID: "id", SortKey: "ts", Payload: "p"}},
		{"int_payload", `(id text, ts timestamp, ev text, p int, PRIMARY KEY ((id), ts, ev))`, good},
		{"format_mismatch", `(id text, sk text, p blob, PRIMARY KEY ((id), sk))`,
			migrate.Mapping{IndexID: "id", SortKey: "sk", SortKeyFormat: migrate.SortTimestampMs, EventID: "sk", Payload: "p"}},
		{"ttl_key_column", `(id text, ts timestamp, ev text, p blob, PRIMARY KEY ((id), ts, ev))`,
			migrate.Mapping{IndexID: "id", SortKey: "ts", EventID: "ev", Payload: "p", TTL: "ev"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			table := st.Keyspace() + "." + c.name
			if c.columns != "" {
				table = createTable(t, st, c.name, c.columns)
			}
			_, err := cqllegacy.Open(ctx, st.Client(), migrate.LegacyConfig{Kind: migrate.KindCQL, Table: table, Mapping: &c.m}, cqllegacy.Options{})
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("open: %v, want store.ErrInvalid", err)
			}
			t.Log(err)
		})
	}
}
