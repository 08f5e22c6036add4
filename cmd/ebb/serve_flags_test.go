package main

import (
	"strconv"
	"testing"

	"github.com/ebb-data/ebb"
	"github.com/ebb-data/ebb/server"
	"github.com/ebb-data/ebb/store/cql"
)

// TestServeFlagDefaults: the defaults `ebb serve` shows and applies are
// the components' own (ebb.DefaultOptions, server.DefaultLimits,
// cql.DefaultOptions), written once there and not retyped here.
func TestServeFlagDefaults(t *testing.T) {
	d, limits := ebb.DefaultOptions(), server.DefaultLimits()
	f := newServeCmd(nil).Flags()
	for flag, want := range map[string]string{
		"reconcile-interval":           d.ReconcileInterval.String(),
		"sweep-interval":               d.SweepInterval.String(),
		"lease-duration":               d.LeaseDuration.String(),
		"expirations-retention":        d.ExpirationsRetention.String(),
		"sweep-max-deletes-per-second": strconv.FormatFloat(d.SweepMaxDeletesPerSecond, 'g', -1, 64),
		// Per process (host:pid): ebb.Open fills it in.
		"replica-id":      "",
		"min-free-bytes":  strconv.FormatInt(ebb.DefaultMinFreeBytes, 10),
		"max-reads":       strconv.Itoa(limits.Reads),
		"cql-consistency": cql.DefaultOptions().Consistency.String(),
	} {
		fl := f.Lookup(flag)
		if fl == nil {
			t.Errorf("no --%s", flag)
			continue
		}
		if fl.DefValue != want {
			t.Errorf("--%s defaults to %q, want %q", flag, fl.DefValue, want)
		}
	}
}
