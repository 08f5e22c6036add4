package durfmt

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                "0s",
		90 * time.Second:                 "90s",
		-90 * time.Second:                "-90s",
		250 * time.Second:                "250s",
		90*time.Second + 5e8:             "90.5s",
		59*time.Minute + 59*time.Second:  "3599s",
		30 * time.Minute:                 "30m",
		time.Hour:                        "1h",
		168 * time.Hour:                  "168h",
		time.Hour + time.Minute:          "1h1m",
		time.Hour + time.Second:          "1h0m1s",
		1500 * time.Millisecond:          "1.5s",
		-2 * time.Hour:                   "-2h",
		time.Hour + 30*time.Minute + 5e8: "1h30m0.5s",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%d) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(Format(d)); err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", Format(d), back, err, d)
		}
	}
}
