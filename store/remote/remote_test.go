package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
)

func TestCommonValidate(t *testing.T) {
	if err := (Common{}).Validate("x"); err != nil {
		t.Fatalf("zero options: %v", err)
	}
	for name, c := range map[string]Common{
		"negative timeout":       {Timeout: -time.Second},
		"negative table timeout": {TableTimeout: -time.Second},
		"negative backoff":       {MaxBackoff: -time.Second},
		"negative margin":        {TTLMargin: -time.Second},
		"negative attempts":      {MaxAttempts: -1},
		"too many attempts":      {MaxAttempts: 101},
	} {
		err := c.Validate("somebackend")
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "somebackend: ") {
			t.Errorf("%s: %v, want ErrInvalid naming the backend", name, err)
		}
	}
}

func TestCommonWithDefaults(t *testing.T) {
	d := Common{Timeout: 1, TableTimeout: 2, MaxAttempts: 3, MaxBackoff: 4, TTLMargin: 5}
	got := Common{}.WithDefaults(d)
	if got.Timeout != 1 || got.TableTimeout != 2 || got.MaxAttempts != 3 || got.MaxBackoff != 4 || got.TTLMargin != 5 {
		t.Fatalf("zero fields not filled: %+v", got)
	}
	if got.Now == nil || got.Logger == nil {
		t.Fatal("Now or Logger left nil")
	}
	set := Common{Timeout: 10, TableTimeout: 20, MaxAttempts: 30, MaxBackoff: 40, TTLMargin: 50}.WithDefaults(d)
	if set.Timeout != 10 || set.TableTimeout != 20 || set.MaxAttempts != 30 || set.MaxBackoff != 40 || set.TTLMargin != 50 {
		t.Fatalf("set fields replaced: %+v", set)
	}
	if dc := DefaultCommon(); dc.Timeout != 10*time.Second || dc.TableTimeout != 5*time.Minute {
		t.Fatalf("DefaultCommon = %+v", dc)
	}
}

func TestRetryPolicy(t *testing.T) {
	p := Common{MaxAttempts: 6, MaxBackoff: time.Second}.RetryPolicy(20 * time.Millisecond)
	if p.Base != 20*time.Millisecond || p.Max != time.Second || p.Attempts != 6 {
		t.Fatalf("policy %+v", p)
	}
	// Full jitter: every wait within (0, the capped delay].
	for attempt, limit := range map[int]time.Duration{1: 20 * time.Millisecond, 3: 80 * time.Millisecond, 20: time.Second} {
		for range 100 {
			if d := p.Delay(attempt); d <= 0 || d > limit {
				t.Fatalf("Delay(%d) = %v, outside (0, %v]", attempt, d, limit)
			}
		}
	}
}

func TestCoreBegin(t *testing.T) {
	c := NewCore(Common{Timeout: time.Minute, TableTimeout: time.Hour}, "")
	ctx, cancel, err := c.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Minute {
		t.Fatalf("data operation deadline %v (%v), want within Timeout", dl, ok)
	}
	cancel()
	ctx, cancel, err = c.BeginTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) <= time.Minute || time.Until(dl) > time.Hour {
		t.Fatalf("table operation deadline %v (%v), want TableTimeout", dl, ok)
	}
	cancel()

	// A caller that has given up starts no data operation.
	gone, stop := context.WithCancel(t.Context())
	stop()
	if _, _, err := c.Begin(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin on a cancelled context: %v", err)
	}

	if !c.Close() || c.Close() {
		t.Fatal("Close must report true once, then false")
	}
	if _, _, err := c.Begin(t.Context()); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Begin after Close: %v", err)
	}
	if _, _, err := c.BeginTable(t.Context()); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("BeginTable after Close: %v", err)
	}
	if _, _, err := c.Begin(gone); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("closed and cancelled: %v, want ErrClosed first", err)
	}
}

func TestCoreBeginWriteAndDrop(t *testing.T) {
	c := NewCore(Common{Timeout: time.Minute, TableTimeout: time.Minute}, "own__")
	if _, _, done, err := c.BeginWrite(t.Context(), 0); !done || err != nil {
		t.Fatalf("empty batch: done %v err %v, want done", done, err)
	}
	ctx, cancel, done, err := c.BeginWrite(t.Context(), 3)
	if done || err != nil || ctx == nil {
		t.Fatalf("batch of 3: done %v err %v", done, err)
	}
	cancel()
	for name, want := range map[string]bool{"t": false, "own__catalog": true, "bad name": true, "": true} {
		ctx, cancel, done, err := c.BeginDrop(t.Context(), name)
		if err != nil || done != want {
			t.Errorf("drop %q: done %v err %v, want done %v", name, done, err, want)
		}
		if !done {
			if ctx == nil {
				t.Errorf("drop %q: no context", name)
			}
			cancel()
		}
	}
	if !c.Valid("t") || c.Valid("own__x") || !NewCore(Common{}, "").Valid("own__x") {
		t.Fatal("Valid does not follow the reserved prefix")
	}
	c.Close()
	// A closed Store refuses even what would be a no-op.
	if _, _, _, err := c.BeginWrite(t.Context(), 0); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("empty batch on a closed Store: %v", err)
	}
	if _, _, _, err := c.BeginDrop(t.Context(), "bad name"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("drop of a non-table on a closed Store: %v", err)
	}
}

func TestCoreBeginCapacity(t *testing.T) {
	c := NewCore(Common{TableTimeout: time.Minute}, "")
	for name, bad := range map[string]store.Capacity{
		"unknown mode":               {Mode: 99},
		"provisioned without units":  {Mode: store.Provisioned, ReadUnits: 5},
		"provisioned without writes": {Mode: store.Provisioned, WriteUnits: 5},
		"negative warm throughput":   {Mode: store.OnDemand, WarmRead: -1},
	} {
		if _, _, err := c.BeginCapacity(t.Context(), bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	for _, good := range []store.Capacity{{Mode: store.OnDemand}, {Mode: store.Provisioned, ReadUnits: 1, WriteUnits: 1, WarmRead: 10}} {
		_, cancel, err := c.BeginCapacity(t.Context(), good)
		if err != nil {
			t.Fatalf("%+v: %v", good, err)
		}
		cancel()
	}
	c.Close()
	if _, _, err := c.BeginCapacity(t.Context(), store.Capacity{Mode: 99}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("an invalid setting on a closed Store: %v, want ErrInvalid first", err)
	}
	if _, _, err := c.BeginCapacity(t.Context(), store.Capacity{Mode: store.OnDemand}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("a valid setting on a closed Store: %v", err)
	}
}

func TestTables(t *testing.T) {
	loads := map[string]int{}
	errBroken := errors.New("broken")
	load := func(_ context.Context, name string) (string, error) {
		loads[name]++
		switch name {
		case "missing":
			return "", fmt.Errorf("%w: %q", store.ErrTableNotFound, name)
		case "broken":
			return "", errBroken
		}
		return "spec of " + name, nil
	}
	gone := errors.New("service: no such table")
	mapErr := func(_ context.Context, op string, err error) error {
		if errors.Is(err, gone) {
			return fmt.Errorf("%s: %w: %w", op, store.ErrTableNotFound, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	tables := NewTables(NewCore(Common{}, "own__"), load, mapErr)
	ctx := t.Context()

	for range 3 {
		if v, err := tables.Lookup(ctx, "t"); err != nil || v != "spec of t" {
			t.Fatalf("Lookup(t) = %q, %v", v, err)
		}
	}
	if loads["t"] != 1 {
		t.Fatalf("t loaded %d times, want once", loads["t"])
	}
	for _, name := range []string{"own__catalog", "bad name"} {
		if _, err := tables.Lookup(ctx, name); !errors.Is(err, store.ErrTableNotFound) || loads[name] != 0 {
			t.Errorf("Lookup(%q): %v after %d loads, want ErrTableNotFound without a load", name, err, loads[name])
		}
	}
	for range 2 {
		if _, err := tables.Lookup(ctx, "missing"); !errors.Is(err, store.ErrTableNotFound) {
			t.Fatalf("Lookup(missing): %v", err)
		}
		if _, err := tables.Lookup(ctx, "broken"); !errors.Is(err, errBroken) {
			t.Fatalf("Lookup(broken): %v", err)
		}
	}
	if loads["missing"] != 2 || loads["broken"] != 2 {
		t.Fatalf("failed loads were cached: %v", loads)
	}

	// An error that is not about the table keeps the entry; one saying it
	// is gone evicts it, so the next Lookup reads the catalog again.
	if err := tables.Err(ctx, "t", "get from", errors.New("timeout")); err.Error() != "get from t: timeout" {
		t.Fatalf("Err = %q", err)
	}
	tables.Lookup(ctx, "t")
	if loads["t"] != 1 {
		t.Fatal("an unrelated error evicted the entry")
	}
	if err := tables.Err(ctx, "t", "get from", gone); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("Err(gone) = %v", err)
	}
	tables.Lookup(ctx, "t")
	if loads["t"] != 2 {
		t.Fatalf("after the table was reported gone: %d loads, want 2", loads["t"])
	}

	tables.Put("new", "as created")
	if v, _ := tables.Lookup(ctx, "new"); v != "as created" || loads["new"] != 0 {
		t.Fatalf("Put entry: %q after %d loads", v, loads["new"])
	}
	tables.Forget("new")
	if v, _ := tables.Lookup(ctx, "new"); v != "spec of new" || loads["new"] != 1 {
		t.Fatalf("after Forget: %q after %d loads", v, loads["new"])
	}
}

func TestMetrics(t *testing.T) {
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "ebb_x_extra_total", Help: "Extra."})
	m := NewMetrics("x", "Requests.", "Latency.", extra)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	m.Observe("get", "ok", 3*time.Millisecond)
	m.Observe("get", "throttled", time.Second)
	extra.Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got[f.GetName()] = append(got[f.GetName()], fmt.Sprint(labels))
		}
	}
	want := map[string][]string{
		"ebb_x_requests_total":  {"[op=get outcome=ok]", "[op=get outcome=throttled]"},
		"ebb_x_request_seconds": {"[op=get]"},
		"ebb_x_extra_total":     {"[]"},
	}
	for name, w := range want {
		if g := got[name]; !slices.Equal(g, w) {
			t.Errorf("%s: %v, want %v", name, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want exactly %v", got, want)
	}
}

func TestErrorFacts(t *testing.T) {
	for _, s := range sentinels {
		if !Mapped(fmt.Errorf("op: %w", s)) {
			t.Errorf("Mapped misses %v", s)
		}
	}
	if Mapped(errors.New("plain")) || Mapped(nil) {
		t.Error("Mapped on an unmapped error")
	}
	for _, err := range []error{
		syscall.ECONNREFUSED, syscall.ECONNRESET, io.EOF, io.ErrUnexpectedEOF,
		fmt.Errorf("read: %w", &net.OpError{Op: "read", Err: errors.New("x")}),
		context.DeadlineExceeded, // a timeout is a net.Error
	} {
		if !Unreached(err) {
			t.Errorf("Unreached(%v) = false", err)
		}
	}
	if Unreached(errors.New("a server's answer")) {
		t.Error("Unreached on an answer")
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithTimeout(t.Context(), -time.Second)
	defer cancel2()
	switch {
	case !Cancelled(cancelled, fmt.Errorf("x: %w", context.Canceled)):
		t.Error("the caller's cancellation not recognised")
	case Cancelled(expired, context.Canceled):
		t.Error("a deadline taken for the caller's cancellation")
	case Cancelled(t.Context(), context.Canceled):
		t.Error("a live context taken as cancelled")
	case Cancelled(cancelled, errors.New("other")):
		t.Error("another error taken as the cancellation")
	}
}
