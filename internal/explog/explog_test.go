package explog

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ebb-data/ebb/internal/testbackend"
	"github.com/ebb-data/ebb/store"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func newStream(t *testing.T, st store.Store, clock *fakeClock, retention time.Duration) *Stream {
	t.Helper()
	s := New(Options{Store: st, Now: clock.Now, Retention: retention, BatchSize: 3})
	if err := s.Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func rowEvent(name string, at time.Time) Event {
	return Event{Type: TypeRow, Kind: KindTable, Name: name, Key: []string{name}, ExpiresAt: at, RemovedAt: at}
}

func names(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Name)
	}
	return out
}

func TestParseCursor(t *testing.T) {
	for _, s := range []string{"", "0-0", "1795746257790036-12"} {
		c, err := ParseCursor(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if s != "" && c.String() != s {
			t.Fatalf("%q reads back as %q", s, c.String())
		}
	}
	for _, s := range []string{"x", "1", "1-", "-1-2", "1-2-3", "a-b"} {
		if _, err := ParseCursor(s); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("%q: %v, want ErrInvalid", s, err)
		}
	}
}

// TestReadMergesSourcesInRemovalOrder appends to both sources and reads
// them back in pages: one sequence in removal order, each event's cursor
// resuming just after it, the filter skipping events without losing the
// cursor's place.
func TestReadMergesSourcesInRemovalOrder(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 9, 59, 59, 0, time.UTC) // across an hour
	clock := &fakeClock{t: t0}
	s := newStream(t, testbackend.Pebble(t, clock.Now), clock, time.Hour)
	var want []string
	for i := range 10 {
		at := t0.Add(time.Duration(i) * 300 * time.Millisecond)
		clock.Set(at)
		name := fmt.Sprintf("r%d", i)
		log := s.Rows()
		if i%3 == 0 {
			name, log = fmt.Sprintf("s%d", i), s.Shards()
		}
		if err := log.Append(ctx, []Event{rowEvent(name, at)}, nil); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	var got []string
	var c Cursor
	for range 10 {
		p, err := s.Read(ctx, c, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Events) == 0 {
			break
		}
		got = append(got, names(p.Events)...)
		// Resuming after the page's second event gives its third first.
		if len(p.Events) == 3 {
			mid, err := ParseCursor(p.Events[1].Cursor)
			if err != nil {
				t.Fatal(err)
			}
			q, err := s.Read(ctx, mid, 1, nil)
			if err != nil || len(q.Events) != 1 || q.Events[0].Name != p.Events[2].Name {
				t.Fatalf("after %s: %v %v, want %s", p.Events[1].Name, names(q.Events), err, p.Events[2].Name)
			}
		}
		c = p.Next
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	p, err := s.Read(ctx, Cursor{}, 100, func(ev *Event) bool { return ev.Name[0] == 's' })
	if err != nil || fmt.Sprint(names(p.Events)) != "[s0 s3 s6 s9]" || p.Next != c {
		t.Fatalf("filtered read %v next %v (%v), want the shards and next %v", names(p.Events), p.Next, err, c)
	}
}

// TestAppendGoesOnAfterRestart checks that a new Stream on the same store
// numbers its entries after the old one's, even when its clock is behind.
func TestAppendGoesOnAfterRestart(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	st := testbackend.Pebble(t, clock.Now)
	s := newStream(t, st, clock, time.Hour)
	if err := s.Rows().Append(ctx, []Event{rowEvent("a", t0), rowEvent("b", t0)}, nil); err != nil {
		t.Fatal(err)
	}
	p, err := s.Read(ctx, Cursor{}, 10, nil)
	if err != nil || len(p.Events) != 2 {
		t.Fatalf("%v %v", names(p.Events), err)
	}
	clock.Set(t0.Add(-time.Second)) // a replica whose clock is behind
	s2 := newStream(t, st, clock, time.Hour)
	if err := s2.Rows().Append(ctx, []Event{rowEvent("c", t0.Add(-time.Second))}, nil); err != nil {
		t.Fatal(err)
	}
	q, err := s2.Read(ctx, p.Next, 10, nil)
	if err != nil || fmt.Sprint(names(q.Events)) != "[c]" {
		t.Fatalf("after the restart: %v %v, want [c]", names(q.Events), err)
	}
}

// TestRetentionDropsWholeHours checks that entries older than the
// retention are removed by a later append, an hour at a time.
func TestRetentionDropsWholeHours(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 10, 30, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	st := testbackend.Pebble(t, clock.Now)
	s := newStream(t, st, clock, time.Hour)
	if err := s.Rows().Append(ctx, []Event{rowEvent("old", t0)}, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(3 * time.Hour)
	clock.Set(later)
	if err := s.Rows().Append(ctx, []Event{rowEvent("new", later)}, []uint64{2}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for h := hourOf(t0.UnixMicro()); h <= hourOf(later.UnixMicro()); h += bucketUs {
		for _, src := range []string{SourceRows, seenSource} {
			p, err := st.Scan(ctx, Table, store.Query{Partition: []any{src, h}, Limit: 10}, func(*store.RawRow) error { n++; return nil })
			if err != nil || p != nil {
				t.Fatal(err)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d entries and markers stored, want the new entry and its marker", n)
	}
}

// TestSeenMarksWhatWasLogged checks the markers Seen reads.
func TestSeenMarksWhatWasLogged(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	s := newStream(t, testbackend.Pebble(t, clock.Now), clock, time.Hour)
	evs := []Event{rowEvent("a", t0), rowEvent("b", t0)}
	if err := s.Rows().Append(ctx, evs[:1], []uint64{7}); err != nil {
		t.Fatal(err)
	}
	seen, err := s.Seen(ctx, evs, []uint64{7, 8})
	if err != nil || !seen[0] || seen[1] {
		t.Fatalf("seen %v, %v; want [true false]", seen, err)
	}
}
