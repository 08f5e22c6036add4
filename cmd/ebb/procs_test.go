package main

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestResolveProcs checks what `ebb serve` sets GOMAXPROCS to: twice the
// CPUs by default, an operator's GOMAXPROCS kept unless --procs is given,
// --procs winning over it, and a negative count refused.
func TestResolveProcs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		cpus    int
		want    int
		wantErr bool
	}{
		{name: "default", cpus: 2, want: 4},
		{name: "default, 8 CPUs", cpus: 8, want: 16},
		{name: "GOMAXPROCS kept", env: map[string]string{"GOMAXPROCS": "3"}, cpus: 2, want: 0},
		{name: "flag wins", args: []string{"--procs", "6"}, env: map[string]string{"GOMAXPROCS": "3"}, cpus: 2, want: 6},
		{name: "flag 0 is the default, environment or not", args: []string{"--procs", "0"}, env: map[string]string{"GOMAXPROCS": "3"}, cpus: 2, want: 4},
		{name: "one", args: []string{"--procs", "1"}, cpus: 2, want: 1},
		{name: "negative", args: []string{"--procs", "-1"}, cpus: 2, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			var n int
			addProcsFlag(f, &n)
			if err := f.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := resolveProcs(n, f.Changed("procs"), func(k string) string { return tc.env[k] }, tc.cpus)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %d, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
