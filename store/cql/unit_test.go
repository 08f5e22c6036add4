package cql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// These tests cover the pure parts of the backend: TTL arithmetic, range
// and token handling, batch phases, the capacity-switch limit, timestamps,
// error mapping, retries and options. The statement builders have golden
// files (golden_test.go); everything that needs a cluster is in
// conformance_test.go and cluster_test.go.

func TestTTLSeconds(t *testing.T) {
	const now = int64(1_000_000_000_000)
	const capS = maxTTLSeconds
	cases := []struct {
		name           string
		exp, margin    int64
		want           int64
		capacitySecond int64
	}{
		{"never", never, 60_000, 0, capS},
		{"none", 0, 60_000, 0, capS},
		{"whole seconds", now + 5_000, 60_000, 65, capS},
		{"rounded up", now + 5_001, 60_000, 66, capS},
		{"one ms", now + 1, 0, 1, capS},
		{"margin rounded up", now + 1_000, 1, 2, capS},
		{"already expired, margin keeps it", now - 30_000, 60_000, 30, capS},
		{"long expired, at least a second", now - 3_600_000, 60_000, 1, capS},
		{"at the cap", now + 100_000, 0, 100, 100},
		{"over the cap: no backstop", now + 100_001, 0, 0, 100},
	}
	for _, c := range cases {
		if got := ttlSeconds(c.exp, now, c.margin, c.capacitySecond); got != c.want {
			t.Errorf("%s: ttlSeconds = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestTTLCap(t *testing.T) {
	limit := time.Unix(expiryLimit, 0)
	for _, c := range []struct {
		wall time.Time
		want int64
	}{
		{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), maxTTLSeconds},
		{limit.Add(-capHeadroom - time.Hour), 3600},
		{limit.Add(-capHeadroom), 0},
		{limit.Add(time.Hour), 0},
	} {
		if got := ttlCap(c.wall); got != c.want {
			t.Errorf("ttlCap(%s) = %d, want %d", c.wall, got, c.want)
		}
	}
	// Whatever the wall clock, a capped TTL never reaches the limit.
	wall := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	if c := ttlCap(wall); wall.Add(time.Duration(c) * time.Second).After(limit.Add(-capHeadroom)) {
		t.Errorf("ttlCap(%s) = %d reaches past the limit", wall, c)
	}
}

func TestCeilDiv(t *testing.T) {
	for _, c := range [][3]int64{{0, 1000, 0}, {1, 1000, 1}, {1000, 1000, 1}, {1001, 1000, 2}, {-1, 1000, 0}, {-1000, 1000, -1}, {-1001, 1000, -1}} {
		if got := ceilDiv(c[0], c[1]); got != c[2] {
			t.Errorf("ceilDiv(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
}

var unitSpec = store.TableSpec{
	Name:         "t",
	PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "c1", Type: store.TypeInt64}, {Name: "c2", Type: store.TypeText}},
	Values:       []store.Column{{Name: "v", Type: store.TypeText}},
}

// TestQueryBounds checks how a page token narrows the range on the side
// the read moves away from, for both clustering orders and directions.
func TestQueryBounds(t *testing.T) {
	tok := func(spec *store.TableSpec, k ...any) []byte { return kit.EncodeClustering(spec, k) }
	desc := unitSpec
	desc.ClusteringOrder = store.Desc
	b := func(incl bool, v ...any) store.Bound { return store.Bound{Values: v, Inclusive: incl} }
	cases := []struct {
		name   string
		spec   *store.TableSpec
		q      store.Query
		lo, hi string
		empty  bool
	}{
		{name: "no bounds", spec: &unitSpec, q: store.Query{}, lo: "none", hi: "none"},
		{name: "token after inclusive prefix", spec: &unitSpec,
			q:  store.Query{Low: b(true, int64(3)), PageToken: tok(&unitSpec, int64(3), "a")},
			lo: "excl(3 a)", hi: "none"},
		{name: "token before the low bound", spec: &unitSpec,
			q:  store.Query{Low: b(true, int64(5)), PageToken: tok(&unitSpec, int64(3), "a")},
			lo: "incl(5)", hi: "none"},
		{name: "exclusive prefix beats a token inside it", spec: &unitSpec,
			q:  store.Query{Low: b(false, int64(3)), PageToken: tok(&unitSpec, int64(3), "z")},
			lo: "excl(3)", hi: "none"},
		{name: "reverse: token on the high side", spec: &unitSpec,
			q:  store.Query{Reverse: true, High: b(true, int64(9)), PageToken: tok(&unitSpec, int64(4), "b")},
			lo: "none", hi: "excl(4 b)"},
		{name: "descending: token on the high side", spec: &desc,
			q:  store.Query{High: b(false, int64(9)), PageToken: tok(&desc, int64(4), "b")},
			lo: "none", hi: "excl(4 b)"},
		{name: "descending reversed: token on the low side", spec: &desc,
			q:  store.Query{Reverse: true, PageToken: tok(&desc, int64(4), "b")},
			lo: "excl(4 b)", hi: "none"},
		{name: "token past the end", spec: &unitSpec,
			q:     store.Query{High: b(true, int64(4)), PageToken: tok(&unitSpec, int64(5), "a")},
			empty: true},
		{name: "inverted", spec: &unitSpec, q: store.Query{Low: b(true, int64(6)), High: b(true, int64(4))}, empty: true},
		{name: "exclusive past the largest key", spec: &unitSpec, q: store.Query{Low: b(false, int64(math.MaxInt64))}, empty: true},
	}
	show := func(x bound) string {
		if x.vals == nil {
			return "none"
		}
		s := "excl"
		if x.inclusive {
			s = "incl"
		}
		return s + "(" + fmt.Sprint(x.vals)[1:len(fmt.Sprint(x.vals))-1] + ")"
	}
	for _, c := range cases {
		lo, hi, empty, err := queryBounds(c.spec, &c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if empty != c.empty || (!empty && (show(lo) != c.lo || show(hi) != c.hi)) {
			t.Errorf("%s: lo %s hi %s empty %v; want lo %s hi %s empty %v", c.name, show(lo), show(hi), empty, c.lo, c.hi, c.empty)
		}
	}
	if _, _, _, err := queryBounds(&unitSpec, &store.Query{PageToken: []byte{0x42}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("malformed token: %v, want ErrInvalid", err)
	}
}

func TestCompareValue(t *testing.T) {
	ordered := [][]any{
		{int64(math.MinInt64), int64(-1), int64(0), int64(1), int64(math.MaxInt64)},
		{"", "\x00", "a", "a\x00", "b", "ü"},
		{[]byte{}, []byte{0}, []byte{0, 0}, []byte{0xff}},
		{time.UnixMilli(-1).UTC(), time.UnixMilli(0).UTC(), time.UnixMilli(1).UTC()},
	}
	for _, vals := range ordered {
		for i := range vals {
			for j := range vals {
				want := 0
				if i < j {
					want = -1
				} else if i > j {
					want = 1
				}
				if got := compareValue(vals[i], vals[j]); got != want {
					t.Errorf("compareValue(%v, %v) = %d, want %d", vals[i], vals[j], got, want)
				}
			}
		}
	}
}

func TestSplitPhases(t *testing.T) {
	spec := unitSpec
	m := func(k store.MutationKind, c int64) store.Mutation {
		return store.Mutation{Kind: k, Partition: []any{"p"}, Clustering: []any{c, "x"}}
	}
	batch := []store.Mutation{
		m(store.DeleteIfExpired, 1), // first: nothing before it
		m(store.Upsert, 1),          // after a delete-if-expired: same phase
		m(store.Upsert, 2),
		m(store.DeleteIfExpired, 3),
		m(store.DeleteIfExpired, 2), // row 2 was written in this phase: cut
		m(store.Upsert, 3),
	}
	rs, err := kit.ResolveBatch(&spec, batch, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := splitPhases(rs)
	want := [][]int{{0, 1, 2, 3}, {4, 5}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("splitPhases = %v, want %v", got, want)
	}
}

func TestProviderSwitchRules(t *testing.T) {
	if got := capabilities(Keyspaces); got.Switches != store.KeyspacesSwitches || !got.WarmThroughput {
		t.Fatalf("Keyspaces: switches %+v warm %v; want the Keyspaces rules and warm throughput", got.Switches, got.WarmThroughput)
	}
	for _, p := range []Provider{Cassandra, ScyllaDB} {
		if got := capabilities(p); got.Switches.Limited() || got.WarmThroughput {
			t.Fatalf("%v: switches %+v warm %v; want no limit and no warm throughput", p, got.Switches, got.WarmThroughput)
		}
	}
}

func TestStamper(t *testing.T) {
	wall := time.UnixMicro(1000)
	st := &stamper{wall: func() time.Time { return wall }}
	if got := st.next(3); got != 1000 {
		t.Fatalf("first = %d", got)
	}
	// The clock did not move (or went back): timestamps still increase.
	if got := st.next(1); got != 1003 {
		t.Fatalf("second = %d, want 1003", got)
	}
	wall = time.UnixMicro(500)
	if got := st.next(2); got != 1004 {
		t.Fatalf("after the clock went back = %d, want 1004", got)
	}
	wall = time.UnixMicro(5000)
	if got := st.next(1); got != 5000 {
		t.Fatalf("after the clock moved on = %d, want 5000", got)
	}
}

func TestSnapshot(t *testing.T) {
	sc := newSchema("ks", unitSpec)
	if got := expiryCols(sc); !slices.Equal(got, []string{"_x", "_e_v"}) {
		t.Fatalf("expiryCols = %v", got)
	}
	snap := snapshotFrom(sc, map[string]any{"[applied]": false, "_x": int64(0), "_e_v": int64(50)})
	if snap[0] != nil || snap[1] != int64(50) {
		t.Fatalf("snapshotFrom = %v, want [nil 50]", snap)
	}
	if !snapshotLive(snap, 49) || snapshotLive(snap, 50) || snapshotLive([]any{nil, nil}, 0) {
		t.Fatal("snapshotLive: expiry == now must be expired, a later one live, nils absent")
	}
}

func TestClassifyAndMap(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err  error
		kind errKind
		want error
	}{
		{&gocql.RequestErrUnavailable{}, kindUnavailable, store.ErrUnavailable},
		{&gocql.RequestErrOverloaded{}, kindOverloaded, store.ErrThrottled},
		{&gocql.RequestErrReadTimeout{}, kindReadTimeout, store.ErrUnavailable},
		{&gocql.RequestErrWriteTimeout{WriteType: "BATCH"}, kindWriteTimeout, store.ErrUnavailable},
		{&gocql.RequestErrWriteTimeout{WriteType: "CAS"}, kindCASUnknown, store.ErrUnavailable},
		{gocql.ErrNoConnections, kindUnavailable, store.ErrUnavailable},
		// A deadline is a net.Error (a timeout): unavailable.
		{fmt.Errorf("x: %w", context.DeadlineExceeded), kindUnavailable, store.ErrUnavailable},
	}
	for _, c := range cases {
		if k := classify(c.err); k != c.kind {
			t.Errorf("classify(%T) = %v, want %v", c.err, k, c.kind)
		}
		if err := mapErr(ctx, "op", c.err); !errors.Is(err, c.want) {
			t.Errorf("mapErr(%T) = %v, want %v", c.err, err, c.want)
		}
	}
	for msg, want := range map[string]errKind{
		"unconfigured table foo":                         kindNotFound,
		"Table ks.foo does not exist":                    kindNotFound,
		"Key length of 1039373 is longer than maximum":   kindInvalid,
		"Mutation of 20000000 bytes is too large":        kindTooLarge,
		"ttl is too large. requested (x) maximum (y)":    kindInvalid,
		"Undefined column name nope in table ks.t":       kindInvalid,
		"Batch too large":                                kindTooLarge,
		"Request exceeds maximum supported expiration d": kindInvalid,
	} {
		if got := classifyInvalid(msg); got != want {
			t.Errorf("classifyInvalid(%q) = %v, want %v", msg, got, want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := mapErr(cancelled, "op", context.Canceled); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("a caller's cancellation = %v, want context.Canceled, not ErrUnavailable", err)
	}
}

func TestRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slept []time.Duration
		var retried []errKind
		p := retryPolicy{backoff.Policy{Base: 10 * time.Millisecond, Max: 40 * time.Millisecond, Attempts: 4,
			Sleep: func(ctx context.Context, d time.Duration) error {
				slept = append(slept, d)
				return backoff.Sleep(ctx, d)
			},
			Jitter:  func(d time.Duration) time.Duration { return d }, // the top of the range
			OnRetry: func(err error) { retried = append(retried, classify(err)) }}}
		calls := 0
		err := p.do(t.Context(), true, func(context.Context) error { calls++; return &gocql.RequestErrOverloaded{} })
		if !errors.Is(err, store.ErrThrottled) || calls != 4 {
			t.Fatalf("overloaded throughout: %v after %d calls, want ErrThrottled after 4", err, calls)
		}
		if !slices.Equal(slept, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}) {
			t.Fatalf("backoff %v", slept)
		}
		if !slices.Equal(retried, []errKind{kindOverloaded, kindOverloaded, kindOverloaded}) {
			t.Fatalf("retries counted %v, want three overloaded", retried)
		}

		calls = 0
		err = p.do(t.Context(), true, func(context.Context) error {
			if calls++; calls < 3 {
				return &gocql.RequestErrWriteTimeout{WriteType: "BATCH"}
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("timeouts then success: %v after %d calls", err, calls)
		}

		calls = 0
		err = p.do(t.Context(), false, func(context.Context) error { calls++; return &gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"} })
		if calls != 1 || !errors.Is(mapErr(t.Context(), "op", err), store.ErrUnavailable) {
			t.Fatalf("non-idempotent write timeout: %v after %d calls, want one call and ErrUnavailable", err, calls)
		}

		calls = 0
		err = p.do(t.Context(), true, func(context.Context) error { calls++; return &gocql.RequestErrReadTimeout{} })
		if calls != 4 || !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("read timeouts throughout: %v after %d calls, want ErrUnavailable after 4", err, calls)
		}

		// A deadline ends the retries, whatever is left of the attempts.
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Millisecond)
		defer cancel()
		p.Attempts = 100
		calls = 0
		err = p.do(ctx, true, func(context.Context) error { calls++; return &gocql.RequestErrOverloaded{} })
		// The wait the deadline cut short is unavailability already.
		if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || calls > 3 {
			t.Fatalf("deadline: %v after %d calls", err, calls)
		}
	})
}

func TestOptionsValidate(t *testing.T) {
	good := DefaultOptions()
	good.Hosts, good.Keyspace = []string{"127.0.0.1:9042"}, "ebb"
	if err := good.Validate(); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for name, change := range map[string]func(o *Options){
		"no hosts":          func(o *Options) { o.Hosts = nil },
		"bad port":          func(o *Options) { o.Hosts = []string{"h:99999"} },
		"empty host":        func(o *Options) { o.Hosts = []string{""} },
		"no keyspace":       func(o *Options) { o.Keyspace = "" },
		"keyspace with dot": func(o *Options) { o.Keyspace = "a.b" },
		"serial consistency": func(o *Options) {
			o.Consistency = gocql.Serial
		},
		"negative timeout":  func(o *Options) { o.Timeout = -time.Second },
		"password alone":    func(o *Options) { o.Username, o.Password = "", "x" },
		"CA without TLS":    func(o *Options) { o.CAFile = "/ca.pem" },
		"too many attempts": func(o *Options) { o.MaxAttempts = 1000 },
	} {
		o := good
		change(&o)
		if err := o.Validate(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	d := Options{Hosts: good.Hosts, Keyspace: "ebb"}.withDefaults()
	if d.Consistency != gocql.LocalQuorum || d.TTLMargin != DefaultTTLMargin || d.Now == nil || d.Logger == nil {
		t.Fatalf("defaults not filled: %+v", d)
	}
}

func TestCapabilities(t *testing.T) {
	for _, p := range []Provider{Cassandra, ScyllaDB, Keyspaces} {
		c := capabilities(p)
		if c.Backend != "cql" || !c.NativeTTL || !c.SharedAcrossProcesses || !c.AtomicPartitionBatch || c.MaxRowBytes != maxRowBytes {
			t.Errorf("%s: %+v", p, c)
		}
	}
	if c := capabilities(Keyspaces); c.MaxAtomicBatch*3 > keyspacesBatchStatements || c.DeleteBatch != keyspacesBatchStatements {
		t.Errorf("keyspaces: %+v: an atomic batch of plain upserts with up to two index entries each must fit 30 statements", c)
	}
}

func TestTableQuota(t *testing.T) {
	if got := maxTables(Options{}, Keyspaces); got != 256 {
		t.Errorf("Keyspaces default quota %d, want 256", got)
	}
	if got := maxTables(Options{}, Cassandra); got != 0 {
		t.Errorf("Cassandra default quota %d, want none", got)
	}
	if got := maxTables(Options{MaxTables: -1}, Keyspaces); got != 0 {
		t.Errorf("MaxTables -1 gives %d, want none", got)
	}
	if got := maxTables(Options{MaxTables: 10}, ScyllaDB); got != 10 {
		t.Errorf("MaxTables 10 gives %d", got)
	}
	existing := map[string]store.TableState{catalogTable: store.Active, "a": store.Active, "b": store.Active}
	plain := store.TableSpec{Name: "c"}
	indexed := store.TableSpec{Name: "c", Indexes: []store.IndexSpec{{Name: "i", Column: "v"}}}
	if err := checkTableQuota(existing, plain, 4); err != nil {
		t.Errorf("the 4th table of 4: %v", err)
	}
	err := checkTableQuota(existing, indexed, 4)
	if !errors.Is(err, ErrTableQuota) || !errors.Is(err, store.ErrCapacityLimit) {
		t.Errorf("a table and its companion past the quota: %v, want ErrTableQuota", err)
	}
	if err := checkTableQuota(existing, store.TableSpec{Name: "a"}, 3); err != nil {
		t.Errorf("re-creating an existing table at the quota: %v", err)
	}
	if err := checkTableQuota(existing, plain, 0); err != nil {
		t.Errorf("no quota: %v", err)
	}
}

// TestOutcomeUnknown: the errors after which a conditional write may or
// may not have applied are the ones settled by a serial read; a refusal
// before anything was done is not.
func TestOutcomeUnknown(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&gocql.RequestErrWriteTimeout{WriteType: "CAS"}, true},
		{&gocql.RequestErrWriteTimeout{WriteType: "SIMPLE"}, true},
		{&gocql.RequestErrCASWriteUnknown{}, true},
		{fmt.Errorf("%w: %w", errNoRetry, gocql.ErrTimeoutNoResponse), true},
		{&gocql.RequestErrUnavailable{}, false},
		{&gocql.RequestErrOverloaded{}, false},
		{&gocql.RequestErrInvalid{}, false},
	} {
		if got := outcomeUnknown(c.err); got != c.want {
			t.Errorf("outcomeUnknown(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	sc := newSchema("ks", store.TableSpec{
		Name:         "t",
		PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
		Values:       []store.Column{{Name: "v", Type: store.TypeText}},
	})
	tag := gocql.UUID{1}
	st := tagStmt(sc, &kit.ResolvedMutation{Partition: []any{"k"}}, tag, 60)
	if want := `UPDATE "ks"."t" USING TTL ? SET "_w" = "_w" + ? WHERE "p" = ?`; st.cql != want {
		t.Errorf("tagStmt = %s, want %s", st.cql, want)
	}
	if len(st.args) != 3 || st.args[0] != int64(60) || st.args[2] != "k" {
		t.Errorf("tagStmt args = %v", st.args)
	}
}

// TestHoldChange checks when the wait for a schema change ends: every live
// node on a version the coordinator has had since the change, not all on
// one version, and without a chosen coordinator all on one.
func TestHoldChange(t *testing.T) {
	since := map[string]bool{"v2": true, "v3": true}
	cases := []struct {
		versions []string
		since    map[string]bool
		want     bool
	}{
		{[]string{"v2"}, since, true},
		{[]string{"v2", "v3"}, since, true},  // one node a change behind the coordinator: both hold the change
		{[]string{"v1", "v3"}, since, false}, // v1 predates the change
		{[]string{"v4"}, since, false},       // never seen at the coordinator
		{[]string{"v1"}, map[string]bool{}, true},
		{[]string{"v1", "v2"}, map[string]bool{}, false},
	}
	for _, c := range cases {
		if got := holdChange(c.versions, c.since); got != c.want {
			t.Errorf("holdChange(%v, %v) = %v, want %v", c.versions, c.since, got, c.want)
		}
	}
}
