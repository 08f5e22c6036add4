// Package timefmt writes timestamps as ebb's API, clients and messages show
// them, and checks a timestamp against the span a feature can keep. The
// wire form is RFC 3339 in UTC with the fraction of a second, trailing
// zeros dropped ("2026-11-22T10:00:00.123Z"): stored times are whole
// milliseconds, so at most three digits appear for them.
package timefmt

import (
	"fmt"
	"time"
)

// Format returns t as the API writes it.
func Format(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FormatOptional returns t as Format does, or "" for the zero time, which
// an omitempty JSON field then leaves out.
func FormatOptional(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return Format(t)
}

// Append appends t to dst as Format writes it. It does not allocate when
// dst has room, so the hot listener's encoders can use it.
func Append(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, time.RFC3339Nano)
}

// Parse reads an RFC 3339 time, with or without a fraction of a second
// and in any offset ("2026-11-22T10:00:00.123+01:00"), and returns it in
// UTC.
func Parse(s string) (time.Time, error) {
	// time.RFC3339 accepts a fractional second when parsing.
	t, err := time.Parse(time.RFC3339, s)
	return t.UTC(), err
}

// Range is the span of timestamps a feature keeps, both ends included.
type Range struct {
	Min, Max time.Time
	// Name says the span in messages ("1970..9999").
	Name string
}

// The spans of the features' timestamps.
var (
	// Years is every time RFC 3339 can write, to the millisecond: the span
	// of shared-table items.
	Years = Range{
		Min:  time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		Max:  time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
		Name: "years 0000..9999",
	}
	// UnixYears is every time from the Unix epoch that RFC 3339 can
	// write: the span of index events, whose shards are named by their
	// Unix seconds.
	UnixYears = Range{
		Min:  time.Unix(0, 0).UTC(),
		Max:  time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		Name: "1970..9999",
	}
	// UnixNanos is every time int64 Unix nanoseconds hold from the epoch
	// on: the span of list items, kept to the nanosecond.
	UnixNanos = Range{
		Min:  time.Unix(0, 0).UTC(),
		Max:  time.Unix(0, 1<<63-1).UTC(),
		Name: "1970-01-01..2262-04-11T23:47:16.854775807Z",
	}
)

// Contains reports whether t lies in r.
func (r Range) Contains(t time.Time) bool { return !t.Before(r.Min) && !t.After(r.Max) }

// Check returns nil when t lies in r, and otherwise an error saying so,
// which the caller wraps with its invalid-argument sentinel.
func (r Range) Check(t time.Time) error {
	if r.Contains(t) {
		return nil
	}
	return fmt.Errorf("timestamp %s is outside %s", Format(t), r.Name)
}
