// Package durfmt writes durations as ebb's API, CLI and plans show them: a
// Go duration string without trailing zero units, "168h" rather than
// "168h0m0s", and seconds alone under an hour when the minutes are not
// whole, "90s" rather than "1m30s", as people write such durations.
// time.ParseDuration reads them back.
package durfmt

import (
	"strconv"
	"strings"
	"time"
)

// Format renders d as Go does, without zero trailing units; a duration of
// one to sixty minutes that is not whole minutes is written in seconds.
func Format(d time.Duration) string {
	if a := max(d, -d); a > time.Minute && a < time.Hour && a%time.Minute != 0 {
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
