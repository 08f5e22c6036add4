// Package durfmt writes durations as ebb's API, CLI and plans show them: a
// Go duration string without trailing zero units, "168h" rather than
// "168h0m0s". time.ParseDuration reads them back.
package durfmt

import (
	"strings"
	"time"
)

// Format renders d as Go does, without zero trailing units.
func Format(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
