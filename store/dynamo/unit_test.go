package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
	"github.com/ebb-data/ebb/store/remote"
)

// These tests cover the pure parts of the backend: folding a batch into
// operations, the retry policy, the capacity-switch limit and error mapping.
// Everything that talks to an endpoint is in dynamo_test.go.

var unitSpec = store.TableSpec{
	Name:         "t",
	PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}},
	Clustering:   []store.Column{{Name: "c", Type: store.TypeInt64}},
	Values:       []store.Column{{Name: "a", Type: store.TypeText}, {Name: "b", Type: store.TypeBytes}},
	Indexes:      []store.IndexSpec{{Name: "by_a", Column: "a"}},
}

var unitNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func foldBatch(t *testing.T, batch []store.Mutation) []phase {
	t.Helper()
	rs, err := kit.ResolveBatch(&unitSpec, batch, unitNow, maxRowBytes)
	if err != nil {
		t.Fatal(err)
	}
	phases, err := fold(&unitSpec, rs, unitNow.UnixMilli(), DefaultTTLMargin.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	return phases
}

func full(c int64, a string, exp time.Time) store.Mutation {
	return store.Mutation{Partition: []any{"p"}, Clustering: []any{c}, ExpiresAt: exp,
		Cells: []store.Cell{{Column: "a", Value: a}, {Column: "b", Value: []byte("x")}}}
}

func partial(c int64, a string, exp time.Time) store.Mutation {
	return store.Mutation{Partition: []any{"p"}, Clustering: []any{c}, ExpiresAt: exp,
		Cells: []store.Cell{{Column: "a", Value: a}}}
}

func kind(k store.MutationKind, c int64, cols ...string) store.Mutation {
	m := store.Mutation{Kind: k, Partition: []any{"p"}, Clustering: []any{c}}
	for _, col := range cols {
		m.Cells = append(m.Cells, store.Cell{Column: col})
	}
	return m
}

// describe renders phases compactly: one line per phase, "kind@last" per op.
func describe(phases []phase) string {
	names := map[opKind]string{opPut: "put", opDelete: "del", opUpdate: "upd", opDeleteIfExpired: "dix"}
	var lines []string
	for _, ph := range phases {
		var ops []string
		for _, o := range ph {
			ops = append(ops, fmt.Sprintf("%s@%d", names[o.kind], o.last))
		}
		lines = append(lines, strings.Join(ops, " "))
	}
	return strings.Join(lines, " | ")
}

func TestFold(t *testing.T) {
	later := unitNow.Add(time.Hour)
	past := unitNow.Add(-time.Hour)
	cases := []struct {
		name  string
		batch []store.Mutation
		want  string
	}{
		{"distinct rows", []store.Mutation{full(1, "x", later), full(2, "y", later), kind(store.DeleteRow, 3)}, "put@0 put@1 del@2"},
		{"later put wins", []store.Mutation{full(1, "x", later), full(1, "y", later)}, "put@1"},
		{"delete then partial is a put", []store.Mutation{kind(store.DeleteRow, 1), partial(1, "y", later)}, "put@1"},
		{"put then partial merges", []store.Mutation{full(1, "x", later), partial(1, "y", later)}, "put@1"},
		{"partials merge", []store.Mutation{partial(1, "x", later), kind(store.DeleteCells, 1, "b")}, "upd@1"},
		{"delete cells after delete", []store.Mutation{kind(store.DeleteRow, 1), kind(store.DeleteCells, 1, "a")}, "del@1"},
		{"sweep of an expired put", []store.Mutation{full(1, "x", past), kind(store.DeleteIfExpired, 1)}, "del@1"},
		{"sweep of a live put", []store.Mutation{full(1, "x", later), kind(store.DeleteIfExpired, 1)}, "put@1"},
		{"sweep after update waits", []store.Mutation{partial(1, "x", later), kind(store.DeleteIfExpired, 1), full(2, "z", later)}, "upd@0 put@2 | dix@1"},
		{"update after sweep waits", []store.Mutation{kind(store.DeleteIfExpired, 1), partial(1, "x", later), partial(1, "y", later)}, "dix@0 | upd@2"},
		{"put after sweep replaces", []store.Mutation{kind(store.DeleteIfExpired, 1), full(1, "x", later)}, "put@1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(foldBatch(t, c.batch)); got != c.want {
				t.Fatalf("fold = %q, want %q", got, c.want)
			}
		})
	}
}

func TestFoldItems(t *testing.T) {
	later := unitNow.Add(time.Hour)
	phases := foldBatch(t, []store.Mutation{full(1, "x", later), partial(1, "y", time.Time{}.Add(0))})
	item := phases[0][0].item
	if s := item[vName(0)].(*types.AttributeValueMemberS).Value; s != "y" {
		t.Fatalf("a = %q, want y", s)
	}
	if _, ok := item[iName(0)]; !ok {
		t.Fatal("indexed column without its index attribute")
	}
	// The partial upsert carried no expiry and the table has no default:
	// the marker and a never expire, so the row has no native TTL.
	if _, ok := item[attrTTL]; ok {
		t.Fatalf("ttl set on a row with parts that never expire: %v", item[attrTTL])
	}

	phases = foldBatch(t, []store.Mutation{full(1, "x", later)})
	ttl, ok := numOf(phases[0][0].item, attrTTL)
	if !ok || ttl*1000 <= later.UnixMilli() {
		t.Fatalf("ttl = %d (%v), want after %d", ttl, ok, later.Unix())
	}

	// An update that writes a never-expiring part removes the TTL; one that
	// only expires raises it to its latest expiry.
	upd := foldBatch(t, []store.Mutation{partial(1, "x", time.Time{})})[0][0]
	if !upd.neverExpires {
		t.Fatal("update without expiry not marked never-expiring")
	}
	upd = foldBatch(t, []store.Mutation{partial(1, "x", later)})[0][0]
	if upd.neverExpires || upd.maxExp != later.UnixMilli() {
		t.Fatalf("update: neverExpires=%v maxExp=%d", upd.neverExpires, upd.maxExp)
	}
}

func TestFoldItemTooLarge(t *testing.T) {
	big := strings.Repeat("x", maxRowBytes-100)
	m := full(1, "x", time.Time{})
	m.Cells[1].Value = []byte(big)
	m2 := partial(1, big, time.Time{}) // merged into the put, the item doubles
	rs, err := kit.ResolveBatch(&unitSpec, []store.Mutation{full(2, "ok", time.Time{}), m, m2}, unitNow, maxRowBytes)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fold(&unitSpec, rs, unitNow.UnixMilli(), DefaultTTLMargin.Milliseconds())
	var me *store.MutationError
	if !errors.Is(err, store.ErrTooLarge) || !errors.As(err, &me) || me.Index != 2 {
		t.Fatalf("fold of an oversize item: %v, want ErrTooLarge at mutation 2", err)
	}
}

func TestDeleteConditionFitsExpressionLimit(t *testing.T) {
	spec := store.TableSpec{Name: "wide", PartitionKey: []store.Column{{Name: "p", Type: store.TypeText}}}
	for i := range store.MaxColumns - 1 {
		spec.Values = append(spec.Values, store.Column{Name: "c" + strconv.Itoa(i), Type: store.TypeInt64})
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	cond := deleteCondition(newExpr(), &spec, unitNow.UnixMilli())
	if len(cond) > 4096 {
		t.Fatalf("condition is %d bytes, DynamoDB allows 4096", len(cond))
	}
}

func TestWriteBatchRetriesUnprocessed(t *testing.T) {
	req := func(n int) map[string][]types.WriteRequest {
		reqs := make([]types.WriteRequest, n)
		for i := range reqs {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
				attrPK: bytesAttr([]byte{byte(i)}),
			}}}
		}
		return map[string][]types.WriteRequest{"t": reqs}
	}
	cases := []struct {
		name string
		// left[i] is how many requests the service leaves unprocessed at
		// attempt i.
		left     []int
		attempts int
		wantErr  error
		wantSent []int
	}{
		{"all at once", []int{0}, 5, nil, []int{25}},
		{"drains", []int{10, 3, 0}, 5, nil, []int{25, 10, 3}},
		{"throttled after the bound", []int{20, 20, 20}, 3, store.ErrThrottled, []int{25, 20, 20}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sent []int
			var slept []time.Duration
			resent := 0
			b := retryPolicy{Policy: backoff.Policy{
				Base: 10 * time.Millisecond, Max: 35 * time.Millisecond, Attempts: c.attempts,
				Sleep:  func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil },
				Jitter: func(d time.Duration) time.Duration { return d }, // the top of the range
			}, onRetry: func() { resent++ }}
			send := func(ctx context.Context, reqs map[string][]types.WriteRequest) (map[string][]types.WriteRequest, error) {
				sent = append(sent, countRequests(reqs))
				n := c.left[len(sent)-1]
				if n == 0 {
					return nil, nil
				}
				return req(n), nil
			}
			err := b.writeBatch(t.Context(), send, req(25))
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if fmt.Sprint(sent) != fmt.Sprint(c.wantSent) {
				t.Fatalf("sent %v, want %v", sent, c.wantSent)
			}
			// Exponential, capped: 10, 20, 35, 35 ms.
			want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 35 * time.Millisecond}
			for i, d := range slept {
				if d != want[min(i, 2)] {
					t.Fatalf("sleep %d = %v, want %v (all: %v)", i, d, want[min(i, 2)], slept)
				}
			}
			if len(slept) != len(sent)-1 || resent != len(sent)-1 {
				t.Fatalf("slept %d times and counted %d re-sends for %d sends", len(slept), resent, len(sent))
			}
		})
	}
}

func TestWriteBatchBackoffWaitsAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retryPolicy{Policy: backoff.Policy{Base: time.Second, Max: 8 * time.Second, Attempts: 10,
			Jitter: func(d time.Duration) time.Duration { return d }}}
		calls := 0
		send := func(ctx context.Context, reqs map[string][]types.WriteRequest) (map[string][]types.WriteRequest, error) {
			calls++
			return reqs, nil // never drains
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		err := b.writeBatch(ctx, send, map[string][]types.WriteRequest{"t": {{}}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
		// Sends at 0, 1, 3, 7 s; the next wait (8 s) outlasts the deadline.
		if calls != 4 || time.Since(start) != 10*time.Second {
			t.Fatalf("%d sends in %v, want 4 in 10s", calls, time.Since(start))
		}
	})
}

func TestSwitchAllowed(t *testing.T) {
	h := func(ago ...time.Duration) []int64 {
		var out []int64
		for _, d := range ago {
			out = append(out, unitNow.Add(-d).UnixMilli())
		}
		return out
	}
	cases := []struct {
		history []int64
		ok      bool
		kept    int
	}{
		{nil, true, 0},
		{h(time.Hour, 2*time.Hour, 3*time.Hour), true, 3},
		{h(time.Hour, 2*time.Hour, 3*time.Hour, 23*time.Hour), false, 4},
		{h(time.Hour, 2*time.Hour, 3*time.Hour, 24*time.Hour), true, 3}, // exactly 24 h ago has left the window
		{h(25*time.Hour, 26*time.Hour, 27*time.Hour, 28*time.Hour, 29*time.Hour), true, 0},
	}
	for i, c := range cases {
		kept, ok := switchLimit.Allowed(c.history, unitNow)
		if ok != c.ok || len(kept) != c.kept {
			t.Errorf("case %d: allowed=%v kept=%d, want %v %d", i, ok, len(kept), c.ok, c.kept)
		}
	}
}

func TestMapErr(t *testing.T) {
	ctx := context.Background()
	api := func(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }
	cases := []struct {
		err  error
		want error
	}{
		{api("ResourceNotFoundException", "no table"), store.ErrTableNotFound},
		{api("com.amazon.coral.service#ResourceNotFoundException", "no table"), store.ErrTableNotFound},
		{api("ProvisionedThroughputExceededException", ""), store.ErrThrottled},
		{api("ThrottlingException", ""), store.ErrThrottled},
		{api("ValidationException", "Item size has exceeded the maximum allowed size"), store.ErrTooLarge},
		{api("ValidationException", "Invalid KeyConditionExpression"), store.ErrInvalid},
		{api("ItemCollectionSizeLimitExceededException", ""), store.ErrTooLarge},
		{api("InternalServerError", ""), store.ErrUnavailable},
		{context.DeadlineExceeded, store.ErrUnavailable},
		{fmt.Errorf("dial: %w", errors.New("connection refused")), store.ErrUnavailable},
	}
	for _, c := range cases {
		if got := mapErr(ctx, "op", c.err); !errors.Is(got, c.want) {
			t.Errorf("mapErr(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if got := mapErr(cancelled, "op", context.Canceled); errors.Is(got, store.ErrUnavailable) || !errors.Is(got, context.Canceled) {
		t.Errorf("a caller's cancellation mapped to %v", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{TablePrefix: "bad prefix"},
		{Endpoint: "127.0.0.1:8000"},
		{Common: remote.Common{Timeout: -time.Second}},
		{Common: remote.Common{MaxAttempts: 1000}},
		{Common: remote.Common{TTLMargin: -time.Second}},
	} {
		if err := o.Validate(); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalid", o, err)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("default options: %v", err)
	}
	for ep, want := range map[string]bool{
		"http://127.0.0.1:8000": true, "http://localhost:1": true, "http://[::1]:9": true,
		"https://dynamodb.example.com": false, "http://10.0.0.1:8000": false,
	} {
		if got := isLoopback(ep); got != want {
			t.Errorf("isLoopback(%q) = %v", ep, got)
		}
	}
}

func TestTransactItems(t *testing.T) {
	later := unitNow.Add(time.Hour)
	phases := foldBatch(t, []store.Mutation{
		full(1, "x", later), kind(store.DeleteRow, 2), partial(3, "y", later), kind(store.DeleteIfExpired, 4),
	})
	if len(phases) != 1 || len(phases[0]) != 4 {
		t.Fatalf("fold: %s", describe(phases))
	}
	s := &Store{}
	tb := &table{spec: unitSpec, physical: "pfx_t"}
	var got []string
	for _, o := range phases[0] {
		it := s.transactItem(tb, o, unitNow.UnixMilli())
		switch {
		case it.Put != nil:
			got = append(got, "put")
		case it.Delete != nil && it.Delete.ConditionExpression != nil:
			got = append(got, "conditional delete")
		case it.Delete != nil:
			got = append(got, "delete")
		case it.Update != nil:
			// In a transaction an update cannot raise the TTL conditionally,
			// so it removes it.
			if !strings.Contains(*it.Update.UpdateExpression, "REMOVE") || it.Update.ExpressionAttributeNames["#ttl"] != attrTTL {
				t.Fatalf("update without TTL removal: %s", *it.Update.UpdateExpression)
			}
			got = append(got, "update")
		}
	}
	if want := "put delete update conditional delete"; strings.Join(got, " ") != want {
		t.Fatalf("transaction items %q, want %q", strings.Join(got, " "), want)
	}

	// The atomic path is taken only for single-partition batches within
	// the limit, on an endpoint with transactions.
	resolve := func(batch ...store.Mutation) ([]kit.ResolvedMutation, []phase) {
		rs, err := kit.ResolveBatch(&unitSpec, batch, unitNow, maxRowBytes)
		if err != nil {
			t.Fatal(err)
		}
		ph, err := fold(&unitSpec, rs, unitNow.UnixMilli(), DefaultTTLMargin.Milliseconds())
		if err != nil {
			t.Fatal(err)
		}
		return rs, ph
	}
	withTx := &Store{caps: store.Capabilities{AtomicPartitionBatch: true, MaxAtomicBatch: maxTransactItems}}
	if rs, ph := resolve(full(1, "x", later), full(2, "y", later)); !withTx.atomic(rs, ph) {
		t.Error("two-row single-partition batch not sent as a transaction")
	}
	if rs, ph := resolve(full(1, "x", later)); withTx.atomic(rs, ph) {
		t.Error("a single-row write needs no transaction")
	}
	other := full(2, "y", later)
	other.Partition = []any{"q"}
	if rs, ph := resolve(full(1, "x", later), other); withTx.atomic(rs, ph) {
		t.Error("two-partition batch sent as a transaction")
	}
	if rs, ph := resolve(full(1, "x", later), full(2, "y", later)); (&Store{}).atomic(rs, ph) {
		t.Error("transaction used on an endpoint without transactions")
	}
}

// TestTTLMargin checks where the native TTL attribute lies: the row's last
// expiry plus the margin, rounded up to whole seconds, for whole-item puts
// and for updates alike, and never overflowing.
func TestTTLMargin(t *testing.T) {
	if got := (Options{}).withDefaults().TTLMargin; got != time.Hour {
		t.Fatalf("default TTLMargin = %v, want 1h", got)
	}
	exp := unitNow.Add(90 * time.Minute).Add(1500 * time.Millisecond)
	cases := []struct {
		margin time.Duration
		want   int64
	}{
		{time.Hour, exp.Add(time.Hour).Unix() + 1}, // .5 s rounds up
		{time.Millisecond, exp.Unix() + 1},
		{2 * time.Second, exp.Unix() + 3},
	}
	for _, c := range cases {
		rs, err := kit.ResolveBatch(&unitSpec, []store.Mutation{full(1, "x", exp)}, unitNow, maxRowBytes)
		if err != nil {
			t.Fatal(err)
		}
		phases, err := fold(&unitSpec, rs, unitNow.UnixMilli(), c.margin.Milliseconds())
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := numOf(phases[0][0].item, attrTTL); !ok || got != c.want {
			t.Errorf("margin %v: ttl = %d (%v), want %d", c.margin, got, ok, c.want)
		}
		if got := ttlSeconds(exp.UnixMilli(), c.margin.Milliseconds()); got != c.want {
			t.Errorf("margin %v: ttlSeconds = %d, want %d", c.margin, got, c.want)
		}
		// Never before the expiry itself, whatever the margin.
		if c.want*1000 <= exp.UnixMilli() {
			t.Errorf("margin %v: ttl %d s is not after the expiry %d ms", c.margin, c.want, exp.UnixMilli())
		}
	}
	if got := ttlSeconds(never-1, time.Hour.Milliseconds()); got != never/1000 {
		t.Errorf("ttlSeconds near the end of time = %d, want saturated %d", got, never/1000)
	}
}
