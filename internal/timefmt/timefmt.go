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
// dst has room, so the hot listener's encoders can use it. It runs once per
// item of a JSON list or event page, so times from 1970 to 9999 are written
// from their Unix seconds in integers, without time's calendar machinery.
func Append(dst []byte, t time.Time) []byte {
	sec := t.Unix()
	if sec < 0 || sec > maxFastUnix {
		return t.UTC().AppendFormat(dst, time.RFC3339Nano)
	}
	y, m, d := civil(sec / 86400)
	rem := sec % 86400
	var b [30]byte
	put2(b[0:], y/100)
	put2(b[2:], y%100)
	b[4] = '-'
	put2(b[5:], m)
	b[7] = '-'
	put2(b[8:], d)
	b[10] = 'T'
	put2(b[11:], rem/3600)
	b[13] = ':'
	put2(b[14:], rem/60%60)
	b[16] = ':'
	put2(b[17:], rem%60)
	n := 19
	if ns := t.Nanosecond(); ns != 0 {
		// Nine digits, then the trailing zeros dropped, as RFC3339Nano does.
		b[19] = '.'
		for i := 28; i >= 20; i-- {
			b[i] = byte('0' + ns%10)
			ns /= 10
		}
		n = 29
		for b[n-1] == '0' {
			n--
		}
	}
	b[n] = 'Z'
	return append(dst, b[:n+1]...)
}

// maxFastUnix is the last second of 9999, the last year of four digits.
const maxFastUnix = 253402300799

// civil returns the proleptic Gregorian date of a count of days since
// 1970-01-01 (non-negative), by Howard Hinnant's days-to-civil algorithm:
// years counted from March so the leap day ends each, in 400-year eras.
func civil(days int64) (y, m, d int64) {
	z := days + 719468 // days since 0000-03-01
	era := z / 146097
	doe := z - era*146097                                  // day of the era, 0..146096
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of the era, 0..399
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the March year, 0..365
	mp := (5*doy + 2) / 153                                // month from March, 0..11
	y, d, m = yoe+era*400, doy-(153*mp+2)/5+1, mp+3
	if m > 12 {
		m -= 12
		y++
	}
	return y, m, d
}

// put2 writes v (0..99) as two digits.
func put2(b []byte, v int64) {
	b[0], b[1] = byte('0'+v/10), byte('0'+v%10)
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
