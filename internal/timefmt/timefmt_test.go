package timefmt

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestFormat pins the wire form: UTC, RFC 3339, the fraction of a second
// without trailing zeros, and no fraction for a whole second.
func TestFormat(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), "2026-11-22T10:00:00Z"},
		{time.Date(2026, 11, 22, 10, 0, 0, 120e6, time.UTC), "2026-11-22T10:00:00.12Z"},
		{time.Date(2026, 11, 22, 11, 0, 0, 123e6, cet), "2026-11-22T10:00:00.123Z"},
		{time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC), "1969-12-31T23:59:59.000000001Z"},
	} {
		if got := Format(c.t); got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.t, got, c.want)
		}
		if got := string(Append([]byte("x"), c.t)); got != "x"+c.want {
			t.Errorf("Append(%v) = %q, want x%q", c.t, got, c.want)
		}
		if got := FormatOptional(c.t); got != c.want {
			t.Errorf("FormatOptional(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	if got := FormatOptional(time.Time{}); got != "" {
		t.Errorf("FormatOptional(zero) = %q, want empty", got)
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	ts := time.Date(2026, 11, 22, 10, 0, 0, 123e6, time.FixedZone("CET", 3600))
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], ts) }); n != 0 {
		t.Fatalf("Append allocates %v times, want 0", n)
	}
}

func TestRangeCheck(t *testing.T) {
	for _, c := range []struct {
		r    Range
		t    time.Time
		want string
	}{
		{Years, Years.Min, ""},
		{Years, Years.Max, ""},
		{Years, Years.Max.Add(time.Millisecond), "timestamp 10000-01-01T00:00:00Z is outside years 0000..9999"},
		{UnixYears, time.Unix(-1, 0), "timestamp 1969-12-31T23:59:59Z is outside 1970..9999"},
		{UnixYears, time.Unix(0, 0), ""},
		{UnixYears, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "timestamp 10000-01-01T00:00:00Z is outside 1970..9999"},
		{UnixNanos, UnixNanos.Max, ""},
		{UnixNanos, UnixNanos.Max.Add(1), "timestamp 2262-04-11T23:47:16.854775808Z is outside 1970-01-01..2262-04-11T23:47:16.854775807Z"},
	} {
		err := c.r.Check(c.t)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%s.Check(%v) = %q, want %q", c.r.Name, c.t, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%s.Check(%v) = nil, want %q", c.r.Name, c.t, c.want)
		}
	}
	if UnixNanos.Name != "1970-01-01.."+Format(UnixNanos.Max) {
		t.Errorf("UnixNanos.Name %q does not end at its Max %s", UnixNanos.Name, Format(UnixNanos.Max))
	}
}

func TestAppendMatchesFormat(t *testing.T) {
	for _, tm := range []time.Time{
		time.Unix(0, 0), time.Unix(0, 1), time.Unix(1, 0).Add(100 * time.Millisecond),
		time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, time.UTC),
		time.Date(2026, 11, 22, 10, 0, 0, 123_456_780, time.FixedZone("x", 3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2000, 2, 29, 23, 59, 59, 0, time.UTC), time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2400, 2, 29, 12, 0, 0, 0, time.UTC), time.Date(1970, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Unix(0, 1<<63-1),
	} {
		if got, want := string(Append(nil, tm)), Format(tm); got != want {
			t.Errorf("Append(%v) = %s, want %s", tm, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		ns := rapid.Int64().Draw(t, "ns")
		trim := rapid.IntRange(0, 9).Draw(t, "trim")
		for range trim {
			ns -= ns % 10
			ns /= 10
		}
		tm := time.Unix(0, ns)
		if got, want := string(Append(nil, tm)), Format(tm); got != want {
			t.Fatalf("Append(%v) = %s, want %s", tm, got, want)
		}
		// Every second up to 9999, past what int64 nanoseconds reach.
		tm = time.Unix(rapid.Int64Range(-1e10, maxFastUnix+1e6).Draw(t, "sec"), ns%1e9)
		if got, want := string(Append(nil, tm)), Format(tm); got != want {
			t.Fatalf("Append(%v) = %s, want %s", tm, got, want)
		}
	})
}
