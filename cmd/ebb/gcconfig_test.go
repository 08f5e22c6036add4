package main

import (
	"math"
	"testing"

	"github.com/spf13/pflag"
)

// TestResolveGC checks what `ebb serve` sets the collector to from its
// flags and the environment: by default a quarter of the memory available
// as the soft limit with GOGC 400; an operator's GOMEMLIMIT or GOGC kept
// unless the flag is given; the flags winning over both.
func TestResolveGC(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name      string
		args      []string
		env       map[string]string
		available int64
		want      gcSettings
		wantErr   bool
	}{
		{name: "default", available: 8 * gib, want: gcSettings{limit: 2 * gib, setLimit: true, percent: 400, setPercent: true}},
		{name: "default, memory unknown", want: gcSettings{limit: math.MaxInt64, setLimit: true}},
		{name: "size", args: []string{"--memory-limit", "512MiB"}, want: gcSettings{limit: 512 << 20, setLimit: true, percent: 400, setPercent: true}},
		{name: "bytes", args: []string{"--memory-limit", "1000000"}, want: gcSettings{limit: 1000000, setLimit: true, percent: 400, setPercent: true}},
		{name: "share", args: []string{"--memory-limit", "50%"}, available: 8 * gib, want: gcSettings{limit: 4 * gib, setLimit: true, percent: 400, setPercent: true}},
		{name: "off keeps the runtime's GOGC", args: []string{"--memory-limit", "off"}, available: 8 * gib, want: gcSettings{limit: math.MaxInt64, setLimit: true}},
		{name: "off with a percent given", args: []string{"--memory-limit", "off", "--gc-percent", "200"}, want: gcSettings{limit: math.MaxInt64, setLimit: true, percent: 200, setPercent: true}},
		{name: "GOMEMLIMIT kept", env: map[string]string{"GOMEMLIMIT": "1GiB"}, available: 8 * gib, want: gcSettings{percent: 400, setPercent: true}},
		{name: "GOMEMLIMIT=off kept", env: map[string]string{"GOMEMLIMIT": "off"}, available: 8 * gib, want: gcSettings{}},
		{name: "GOGC kept", env: map[string]string{"GOGC": "150"}, available: 8 * gib, want: gcSettings{limit: 2 * gib, setLimit: true}},
		{name: "flags win", args: []string{"--memory-limit", "1GiB", "--gc-percent", "-1"}, env: map[string]string{"GOGC": "150", "GOMEMLIMIT": "3GiB"},
			want: gcSettings{limit: gib, setLimit: true, percent: -1, setPercent: true}},
		{name: "collector off without a limit", args: []string{"--memory-limit", "off", "--gc-percent", "-1"}, wantErr: true},
		{name: "share of unknown memory", args: []string{"--memory-limit", "25%"}, wantErr: true},
		{name: "malformed size", args: []string{"--memory-limit", "2GB"}, wantErr: true},
		{name: "share over 100", args: []string{"--memory-limit", "120%"}, available: gib, wantErr: true},
		{name: "percent below -1", args: []string{"--gc-percent", "-2"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			var c gcConfig
			addGCFlags(f, &c)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := resolveGC(c, f, func(k string) string { return tc.env[k] }, tc.available)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
