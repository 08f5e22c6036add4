package main

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebb-data/ebb/cost"
)

// The worked examples of docs/cost.md: each figure below is the one the
// document works out by hand, and the test holds `ebb cost --json` to it
// to the cent.

func costJSON(t *testing.T, args ...string) *cost.Estimate {
	t.Helper()
	code, out, errOut := cli(append([]string{"cost", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("ebb cost %s: exit %d, %s", strings.Join(args, " "), code, errOut)
	}
	var e cost.Estimate
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("ebb cost --json: %v\n%s", err, out)
	}
	return &e
}

// want is a strategy's hand-worked monthly cost.
type want struct{ writes, reads, storage, expiry, total float64 }

func checkStrategies(t *testing.T, e *cost.Estimate, provider string, wants map[string]want) {
	t.Helper()
	for _, p := range e.Providers {
		if p.Provider != provider {
			continue
		}
		for _, b := range p.Strategies {
			w, ok := wants[b.Strategy]
			if !ok {
				continue
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"writes", b.Writes, w.writes}, {"reads", b.Reads, w.reads}, {"storage", b.Storage, w.storage}, {"expiry", b.Expiry, w.expiry}, {"total", b.Total, w.total}} {
				if math.Abs(f.got-f.want) > 0.005 {
					t.Errorf("%s %s %s: %.4f, docs/cost.md works out %.2f", provider, b.Strategy, f.name, f.got, f.want)
				}
			}
			delete(wants, b.Strategy)
		}
	}
	for s := range wants {
		t.Errorf("%s: no %s in the estimate", provider, s)
	}
}

func TestCostExampleShardedIndex(t *testing.T) {
	e := costJSON(t, "--rows-per-second", "25000", "--row-bytes", "1024", "--retention", "1008h", "--shard-period", "168h", "--provider", "keyspaces")
	checkStrategies(t, e, "keyspaces", map[string]want{
		cost.NativeTTL: {41062.50, 0, 26779.17, 18067.50, 85909.17},
		cost.Shards:    {41062.50, 0, 23431.78, 0, 64494.28},
	})
}

func TestCostExampleLists(t *testing.T) {
	for _, c := range []struct {
		rows, reads string
		wants       map[string]want
	}{
		{"10000", "1000", map[string]want{
			cost.NativeTTL:        {16425.00, 1642.50, 1931.19, 0, 19998.69},
			cost.NativeTTLSweeper: {16425.00, 1642.50, 1810.49, 49435.40, 69313.39},
		}},
		{"100000", "10000", map[string]want{
			cost.NativeTTL:        {164250.00, 16425.00, 19311.90, 0, 199986.90},
			cost.NativeTTLSweeper: {164250.00, 16425.00, 18104.91, 494354.00, 693133.91},
		}},
	} {
		e := costJSON(t, "--rows-per-second", c.rows, "--row-bytes", "200", "--retention", "720h",
			"--reads-per-second", c.reads, "--rows-per-read", "100", "--own-ttl-share", "1", "--own-ttl", "720h", "--provider", "dynamodb")
		checkStrategies(t, e, "dynamodb", c.wants)
	}
}

func TestCostExampleSharedTable(t *testing.T) {
	e := costJSON(t, "--rows-per-second", "100", "--row-bytes", "500", "--retention", "720h",
		"--reads-per-second", "200", "--rows-per-read", "10", "--own-ttl-share", "0.25", "--own-ttl", "1h", "--provider", "dynamodb")
	checkStrategies(t, e, "dynamodb", map[string]want{
		cost.NativeTTL:        {164.25, 131.40, 29.58, 0, 325.23},
		cost.Shards:           {164.25, 131.40, 40.43, 0, 336.08},
		cost.ShardsSweeper:    {164.25, 131.40, 30.34, 123.59, 449.58},
		cost.NativeTTLSweeper: {164.25, 131.40, 28.98, 123.59, 448.22},
	})
}

func TestCostTableAndChart(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "cost.svg")
	code, out, errOut := cli("cost", "--rows-per-second", "100", "--row-bytes", "500", "--retention", "720h",
		"--own-ttl-share", "0.25", "--own-ttl", "1h", "--chart", chart)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{"dynamodb", "keyspaces", "native per-row TTL", "ebb time shards, dropped whole",
		"ebb shards + sweeper for own-TTL rows", "ebb sweeper over native TTL", "by shard period", "164.25"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
		t.Errorf("table holds a NaN or an infinity:\n%s", out)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Errorf("chart is not well-formed XML: %v", err)
	}
	if n := strings.Count(string(svg), "<polyline"); n != 8 {
		t.Errorf("chart has %d lines, want 4 strategies on 2 providers", n)
	}
	if strings.Contains(string(svg), "NaN") {
		t.Error("chart holds a NaN")
	}
}

func TestCostBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := []string{"--rows-per-second", "100", "--row-bytes", "500", "--retention", "720h"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rows-per-second", "-5", "--row-bytes", "500", "--retention", "720h"}, "--rows-per-second: -5 is negative"},
		{[]string{"--rows-per-second", "NaN", "--row-bytes", "500", "--retention", "720h"}, "--rows-per-second: is not a number"},
		{[]string{"--rows-per-second", "1e12", "--row-bytes", "500", "--retention", "720h"}, "--rows-per-second: 1e+12 is absurd"},
		{[]string{"--rows-per-second", "100", "--row-bytes", "0", "--retention", "720h"}, "--row-bytes: 0"},
		{[]string{"--rows-per-second", "100", "--row-bytes", "500000", "--retention", "720h"}, "--row-bytes: 500000 exceeds DynamoDB's item limit"},
		{[]string{"--rows-per-second", "100", "--row-bytes", "500", "--retention", "-1h"}, "--retention: -1h is below 1s"},
		{append(base, "--own-ttl-share", "1.5"), "--own-ttl-share: 1.5"},
		{append(base, "--own-ttl", "800h"), "--own-ttl: 800h is absurd (at most 720h)"},
		{append(base, "--provider", "cosmos"), `--provider: unknown provider "cosmos"`},
		{append(base, "--capacity", "reserved"), `--capacity: "reserved"`},
		{append(base, "--prices", write("neg.json", `{"keyspaces":{"ttl_delete_per_million":-1}}`)), "--prices: " + filepath.Join(dir, "neg.json") + ": prices.keyspaces.ttl_delete_per_million: -1 is negative"},
		{append(base, "--prices", write("bad.json", `{"dynamodb":`)), "--prices: prices: " + filepath.Join(dir, "bad.json")},
		{append(base, "--prices", write("unknown.yaml", "dynamodb:\n  storage_gb_mnth: 1\n")), "field storage_gb_mnth not found"},
		{append(base, "--prices", write("p.txt", "")), `want a .json, .yaml or .yml file, not ".txt"`},
		{[]string{"--row-bytes", "500"}, "give the workload"},
	} {
		code, _, errOut := cli(append([]string{"cost"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("ebb cost %s: exit %d, %q; want an error with %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}

func TestCostPricesAndWorkloadFiles(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte("keyspaces:\n  ttl_delete_per_million: 0.55\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	workload := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(workload, []byte("rows-per-second: 25000\nrow-bytes: 1024\nretention: 1008h\nproviders: [keyspaces]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Doubling the TTL delete price doubles native TTL's expiry, 18,067.50.
	e := costJSON(t, "--workload", workload, "--prices", prices)
	checkStrategies(t, e, "keyspaces", map[string]want{cost.NativeTTL: {41062.50, 0, 26779.17, 36135.00, 103976.67}})
	// A flag overrides the file.
	e = costJSON(t, "--workload", workload, "--rows-per-second", "12500")
	checkStrategies(t, e, "keyspaces", map[string]want{cost.Shards: {20531.25, 0, 11715.89, 0, 32247.14}})
}

func TestCostFrom(t *testing.T) {
	url := fullServer(t, true)
	// Drive some traffic through the server's features.
	if code, _, errOut := cli("--server", url, "--token", "root", "tables", "create", "t"); code != 0 {
		t.Fatalf("create: %s", errOut)
	}
	code, out, errOut := cli("--token", "root", "cost", "--from", url, "--json")
	if code != 0 {
		t.Fatalf("cost --from: exit %d %s", code, errOut)
	}
	var live cost.Live
	if err := json.Unmarshal([]byte(out), &live); err != nil {
		t.Fatal(err)
	}
	if len(live.Projections) != 2 || live.Seconds <= 0 || !live.StorageKnown {
		t.Fatalf("projection %+v", live)
	}
	for _, p := range live.Projections {
		if p.Writes <= 0 || math.IsNaN(p.Total) || p.NativeTTL < 0 {
			t.Errorf("%s: %+v", p.Provider, p)
		}
	}
	if code, out, errOut := cli("--token", "root", "cost", "--from", url); code != 0 || !strings.Contains(out, "with native TTL") {
		t.Errorf("cost --from table: exit %d %q %q", code, out, errOut)
	}
	if code, _, errOut := cli("--token", "narrow", "cost", "--from", url); code == 0 || !strings.Contains(errOut, "403") {
		t.Errorf("cost --from without the admin scope: exit %d %q", code, errOut)
	}
}
