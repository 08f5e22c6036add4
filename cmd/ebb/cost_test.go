package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/cost"
)

// The worked examples of docs/cost.md: each test runs the command the
// document gives, holds `ebb cost --json` to each figure the document works
// out by hand, to the cent, and checks that the document states the figure.

// costExample returns the text of the worked example of docs/cost.md
// headed "### n." and the arguments of each sh block in it, without the
// leading "ebb".
func costExample(t *testing.T, n int) (string, [][]string) {
	t.Helper()
	b, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	head := fmt.Sprintf("\n### %d. ", n)
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("docs/cost.md has no worked example %q", head[1:])
	}
	text := doc[i+1:]
	if j := strings.Index(text, "\n## "); j >= 0 {
		text = text[:j]
	}
	if j := strings.Index(text, "\n### "); j >= 0 {
		text = text[:j]
	}
	var cmds [][]string
	for rest := text; ; {
		k := strings.Index(rest, "```sh\n")
		if k < 0 {
			break
		}
		rest = rest[k+len("```sh\n"):]
		end := strings.Index(rest, "```")
		if end < 0 {
			t.Fatalf("example %d: unterminated sh block", n)
		}
		args := strings.Fields(strings.ReplaceAll(rest[:end], "\\\n", " "))
		if len(args) == 0 || args[0] != "ebb" || args[1] != "cost" {
			t.Fatalf("example %d: %q is not an ebb cost command", n, rest[:end])
		}
		cmds = append(cmds, args[2:])
		rest = rest[end+3:]
	}
	if len(cmds) == 0 {
		t.Fatalf("example %d has no command", n)
	}
	return text, cmds
}

// stated fails the test unless the document states every figure that is
// not zero, as "$1,234.56".
func stated(t *testing.T, text string, figures ...float64) {
	t.Helper()
	for _, v := range figures {
		if v != 0 && !strings.Contains(text, "$"+cost.Money(v)) {
			t.Errorf("docs/cost.md does not state $%s", cost.Money(v))
		}
	}
}

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

// checkStrategies holds the estimate to wants and, with a document text,
// checks that the text states them.
func checkStrategies(t *testing.T, e *cost.Estimate, provider, doc string, wants map[string]want) {
	t.Helper()
	if doc != "" {
		for _, w := range wants {
			stated(t, doc, w.writes, w.reads, w.storage, w.expiry, w.total)
		}
	}
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
	doc, cmds := costExample(t, 1)
	e := costJSON(t, cmds[0]...)
	checkStrategies(t, e, "keyspaces", doc, map[string]want{
		cost.NativeTTL: {41062.50, 0, 26779.17, 18067.50, 85909.17},
		cost.Shards:    {41062.50, 0, 23431.78, 0, 64494.28},
	})
}

func TestCostExampleLists(t *testing.T) {
	doc, cmds := costExample(t, 2)
	// The document gives the command at 10,000 items a second; at 100,000
	// it is the same with ten times the writes and reads.
	tenfold := slices.Clone(cmds[0])
	for i := 1; i < len(tenfold); i++ {
		switch tenfold[i-1] {
		case "--rows-per-second":
			tenfold[i] = "100000"
		case "--reads-per-second":
			tenfold[i] = "10000"
		}
	}
	for _, c := range []struct {
		args  []string
		wants map[string]want
	}{
		{cmds[0], map[string]want{
			cost.NativeTTL:        {16425.00, 1642.50, 1931.19, 0, 19998.69},
			cost.NativeTTLSweeper: {16425.00, 1642.50, 1810.49, 49435.40, 69313.39},
		}},
		{tenfold, map[string]want{
			cost.NativeTTL:        {164250.00, 16425.00, 19311.90, 0, 199986.90},
			cost.NativeTTLSweeper: {164250.00, 16425.00, 18104.91, 494354.00, 693133.91},
		}},
	} {
		e := costJSON(t, c.args...)
		if e.Workload.RowsPerSecond != 10000 && e.Workload.RowsPerSecond != 100000 {
			t.Fatalf("the example's command writes %g rows a second", e.Workload.RowsPerSecond)
		}
		checkStrategies(t, e, "dynamodb", doc, c.wants)
	}
}

func TestCostExampleModes(t *testing.T) {
	doc, cmds := costExample(t, 4)
	e := costJSON(t, cmds[0]...)
	if time.Duration(e.Workload.GoneWithin) != 72*time.Hour {
		t.Fatalf("the example's bound is %s, want 72h", time.Duration(e.Workload.GoneWithin))
	}
	wants := map[string]map[string]want{
		"dynamodb": {
			cost.ModeSweep:  {16425.00, 1642.50, 1810.49, 49435.40, 69313.39},
			cost.ModeNative: {16425.00, 1642.50, 1931.19, 0, 19998.69},
			cost.ModeDrop:   {16425.00, 1642.50, 2021.72, 0, 20089.22},
		},
		"keyspaces": {
			cost.ModeSweep:  {16425.00, 1642.50, 1206.99, 52720.40, 71994.89},
			cost.ModeNative: {16425.00, 1642.50, 1609.33, 7227.00, 26903.83},
			cost.ModeDrop:   {16425.00, 1642.50, 1347.81, 0, 19415.31},
		},
	}
	cheapest := map[string]string{"dynamodb": cost.ModeNative, "keyspaces": cost.ModeSweep}
	for _, p := range e.Providers {
		for _, b := range p.Modes {
			w := wants[p.Provider][b.Strategy]
			stated(t, doc, w.writes, w.reads, w.storage, w.expiry, w.total)
			for _, f := range []struct {
				name      string
				got, want float64
			}{{"writes", b.Writes, w.writes}, {"reads", b.Reads, w.reads}, {"storage", b.Storage, w.storage}, {"expiry", b.Expiry, w.expiry}, {"total", b.Total, w.total}} {
				if math.Abs(f.got-f.want) > 0.005 {
					t.Errorf("%s %s %s: %.4f, docs/cost.md works out %.2f", p.Provider, b.Strategy, f.name, f.got, f.want)
				}
			}
		}
		if p.CheapestMode != cheapest[p.Provider] {
			t.Errorf("%s: cheapest within 72h %q, docs/cost.md says %q", p.Provider, p.CheapestMode, cheapest[p.Provider])
		}
	}
	code, out, errOut := cli(append([]string{"cost"}, cmds[0]...)...)
	if code != 0 || !strings.Contains(out, "cheapest gone within 72h: native") || !strings.Contains(out, "cheapest gone within 72h: sweep") {
		t.Errorf("ebb cost: exit %d, %s%s", code, out, errOut)
	}
}

func TestCostExampleSharedTable(t *testing.T) {
	doc, cmds := costExample(t, 3)
	if len(cmds) != 2 {
		t.Fatalf("example 3 has %d commands, want the workload's and the tables'", len(cmds))
	}
	e := costJSON(t, cmds[0]...)
	checkStrategies(t, e, "dynamodb", doc, map[string]want{
		cost.NativeTTL:        {164.25, 131.40, 29.58, 0, 325.23},
		cost.Shards:           {164.25, 131.40, 40.43, 0, 336.08},
		cost.ShardsSweeper:    {164.25, 131.40, 30.34, 123.59, 449.58},
		cost.NativeTTLSweeper: {164.25, 131.40, 28.98, 123.59, 448.22},
	})
	if len(e.Providers[0].Tables) != 0 {
		t.Errorf("one table asked for, a comparison of tables given: %+v", e.Providers[0].Tables)
	}

	// The same workload as 1,000 tables of their own, provisioned.
	e = costJSON(t, cmds[1]...)
	if e.Workload.Tables != 1000 || e.Workload.Capacity != cost.Provisioned {
		t.Fatalf("the tables command estimates %d tables, %s", e.Workload.Tables, e.Workload.Capacity)
	}
	type tables struct {
		separate, shared, saved    float64
		tableWCU, tableRCU, sw, sr int64
	}
	wants := map[string]tables{
		cost.NativeTTL:        {569.40, 122.14, 447.26, 1, 1, 143, 572},
		cost.Shards:           {569.40, 122.14, 447.26, 1, 1, 143, 572},
		cost.ShardsSweeper:    {569.40, 173.10, 396.30, 1, 1, 250, 574},
		cost.NativeTTLSweeper: {569.40, 173.10, 396.30, 1, 1, 250, 574},
	}
	rows := e.Providers[0].Tables
	if len(rows) != len(wants) {
		t.Fatalf("%d rows comparing tables, want %d", len(rows), len(wants))
	}
	for _, r := range rows {
		w := wants[r.Strategy]
		if math.Abs(r.Separate-w.separate) > 0.005 || math.Abs(r.Shared-w.shared) > 0.005 || math.Abs(r.Saved-w.saved) > 0.005 ||
			r.TableWCU != w.tableWCU || r.TableRCU != w.tableRCU || r.SharedWCU != w.sw || r.SharedRCU != w.sr {
			t.Errorf("%s: %+v; docs/cost.md works out %+v", r.Strategy, r, w)
		}
		stated(t, doc, w.separate, w.shared, w.saved)
	}

	// On demand an idle table costs nothing: the layouts cost the same.
	e = costJSON(t, append(cmds[0], "--tables", "1000")...)
	for _, r := range e.Providers[0].Tables {
		if r.Saved != 0 || r.Separate != r.Shared || r.Shared <= 0 {
			t.Errorf("on demand, %s: %+v; want the same cost either way", r.Strategy, r)
		}
	}
	code, out, errOut := cli(append([]string{"cost"}, cmds[1]...)...)
	if code != 0 || !strings.Contains(out, "1,000 tables") || !strings.Contains(out, "569.40") || !strings.Contains(out, "1+1") {
		t.Errorf("ebb cost %s: exit %d, %s\n%s", strings.Join(cmds[1], " "), code, errOut, out)
	}
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
	checkChartLayout(t, svg)
}

// checkChartLayout checks that every text of a chart fits in its width
// (at 7 pixels a character, more than 12-pixel sans-serif takes) and that
// the y axis's ticks fall on round values: whole multiples of 1, 2, 2.5 or
// 5 times a power of ten, evenly spaced from zero.
func checkChartLayout(t *testing.T, svg []byte) {
	t.Helper()
	var doc struct {
		Width int `xml:"width,attr"`
		Texts []struct {
			X      float64 `xml:"x,attr"`
			Anchor string  `xml:"text-anchor,attr"`
			Body   string  `xml:",chardata"`
		} `xml:"text"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatal(err)
	}
	var ticks []float64
	for _, tx := range doc.Texts {
		if tx.Anchor == "" && tx.X+7*float64(len(tx.Body)) > float64(doc.Width) {
			t.Errorf("text %q at x=%g runs past the chart's width, %d", tx.Body, tx.X, doc.Width)
		}
		if tx.Anchor == "end" {
			var v float64
			if _, err := fmt.Sscan(strings.ReplaceAll(tx.Body, ",", ""), &v); err != nil {
				t.Fatalf("y tick %q: %v", tx.Body, err)
			}
			ticks = append(ticks, v)
		}
	}
	if len(ticks) < 3 {
		t.Fatalf("y ticks %v: want at least 3 per panel", ticks)
	}
	step := ticks[1] - ticks[0]
	round := false
	for p := 0.01; p < 1e9; p *= 10 {
		for _, m := range []float64{1, 2, 2.5, 5} {
			round = round || math.Abs(step-m*p) < 1e-6*p
		}
	}
	if ticks[0] != 0 || !round {
		t.Errorf("y ticks %v: want round values from 0", ticks)
	}
	for i, v := range ticks {
		if v != 0 && math.Abs(math.Remainder(v, step)) > 1e-6*step {
			t.Errorf("y tick %d, %g, is not a multiple of %g: %v", i, v, step, ticks)
		}
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
		{append(base, "--own-ttl", "800h"), "--own-ttl: 800h is longer than the retention, 720h"},
		{append(base, "--utilization", "0.5"), "--utilization: 0.5 applies to provisioned capacity only, and the capacity is on demand"},
		{[]string{"--workload", write("wu.yaml", "rows-per-second: 3\nrow-bytes: 10\nretention: 1h\nutilization: 0.5\n")}, "wu.yaml: utilization: 0.5 applies to provisioned capacity only"},
		{[]string{"--workload", write("wp.yaml", "rows-per-second: 3\nrow-bytes: 10\nretention: 1h\nprovider: cosmos\n")}, `wp.yaml: provider: unknown provider "cosmos"`},
		{[]string{"--workload", write("wpp.yaml", "rows-per-second: 3\nrow-bytes: 10\nretention: 1h\nprovider: dynamodb\nproviders: [dynamodb]\n")}, "wpp.yaml: provider: give provider or providers, not both"},
		{[]string{"--workload", write("wc.yaml", "rows-per-second: 3\nrow-bytes: 10\nretention: 1h\nchart: 3\n")}, "wc.yaml: chart: want a file name, not 3"},
		{append(base, "--provider", "cosmos"), `--provider: unknown provider "cosmos"`},
		{append(base, "--capacity", "reserved"), `--capacity: "reserved"`},
		{append(base, "--tables", "-3"), "--tables: -3: want 1 or more"},
		{append(base, "--tables", "5000000"), "--tables: 5000000 is absurd (at most 1000000)"},
		{append(base, "--tables", "0"), "--tables: 0 stands for the default, 1"},
		{append(base, "--dynamodb-ttl-lag", "0s"), "--dynamodb-ttl-lag: 0s stands for the default, 48h"},
		{append(base, "--utilization", "0", "--capacity", "provisioned"), "--utilization: 0 stands for the default, 0.7"},
		{append(base, "--provider", ","), `--provider: "," names no provider`},
		{append(base, "--prices", write("neg.json", `{"keyspaces":{"ttl_delete_per_million":-1}}`)), "--prices " + filepath.Join(dir, "neg.json") + ": prices.keyspaces.ttl_delete_per_million: -1 is negative"},
		{append(base, "--prices", write("nan.yaml", "dynamodb:\n  storage_gb_month: .nan\n")), "prices.dynamodb.storage_gb_month: is not a number"},
		{append(base, "--prices", write("huge.yaml", "keyspaces:\n  on_demand:\n    write_per_million: 1e9\n")), "prices.keyspaces.on_demand.write_per_million: 1e+09 is absurd (at most 1000)"},
		{append(base, "--prices", write("bad.json", `{"dynamodb":`)), "--prices " + filepath.Join(dir, "bad.json") + ": not valid JSON: it ends too soon"},
		{append(base, "--prices", write("comma.json", `{"dynamodb": {},}`)), "not valid JSON: line 1: invalid character '}'"},
		{append(base, "--prices", write("two.json", `{} {}`)), "not one JSON object: more follows it"},
		{append(base, "--prices", write("empty.yaml", "\n")), "empty.yaml: the file is empty"},
		{append(base, "--prices", write("type.json", `{"dynamodb":{"storage_gb_month":"cheap"}}`)), `prices.dynamodb.storage_gb_month: want a number, not "cheap"`},
		{append(base, "--prices", write("shape.yaml", "dynamodb:\n  on_demand: 5\n")), "prices.dynamodb.on_demand: want an object of keys, not 5"},
		{append(base, "--prices", write("unknown.yaml", "dynamodb:\n  storage_gb_mnth: 1\n")), "prices.dynamodb.storage_gb_mnth: unknown key"},
		{append(base, "--prices", write("p.txt", "")), `want a .json, .yaml or .yml file, not ".txt"`},
		{append(base, "--prices", filepath.Join(dir, "missing.json")), "missing.json: no such file or directory"},
		{[]string{"--workload", write("w1.yaml", "rows-per-second: -3\nrow-bytes: 10\nretention: 1h\n")}, "w1.yaml: rows-per-second: -3 is negative"},
		{[]string{"--workload", write("w2.yaml", "rows-per-second: 3\nrow-bytes: 10\nretention: forever\n")}, `w2.yaml: retention: want a duration such as "1008h", not "forever"`},
		{[]string{"--workload", write("w3.yaml", "rows_per_second: 3\n")}, "w3.yaml: rows_per_second: unknown key"},
		{[]string{"--workload", write("w4.json", `{"rows-per-second": "many"}`)}, `w4.json: rows-per-second: want a number, not "many"`},
		{[]string{"--workload", write("w5.yaml", "rows-per-second: 3\nrow-bytes: 10.5\nretention: 1h\n")}, "w5.yaml: row-bytes: want a whole number, not 10.5"},
		{[]string{"--workload", write("w6.yaml", "rows-per-second: 3\nrow-bytes: 10\nretention: 1h\nproviders: [cosmos]\n")}, `w6.yaml: providers: unknown provider "cosmos"`},
		{[]string{"--workload", write("w7.yaml", "rows-per-second: .inf\nrow-bytes: 10\nretention: 1h\n")}, "w7.yaml: rows-per-second: is not a number"},
		// A flag overriding the file is named as the flag.
		{[]string{"--workload", filepath.Join(dir, "w1.yaml"), "--rows-per-second", "-4"}, "ebb: --rows-per-second: -4 is negative"},
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
	checkStrategies(t, e, "keyspaces", "", map[string]want{cost.NativeTTL: {41062.50, 0, 26779.17, 36135.00, 103976.67}})
	// A flag overrides the file.
	e = costJSON(t, "--workload", workload, "--rows-per-second", "12500")
	checkStrategies(t, e, "keyspaces", "", map[string]want{cost.Shards: {20531.25, 0, 11715.89, 0, 32247.14}})

	// The file's keys are the flags' names: provider as the flag takes
	// it, chart and prices (relative to the file) too.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	byFlags := filepath.Join(sub, "w.yaml")
	if err := os.WriteFile(byFlags, []byte("rows-per-second: 25000\nrow-bytes: 1024\nretention: 1008h\nprovider: keyspaces\nchart: c.svg\nprices: ../prices.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e = costJSON(t, "--workload", byFlags)
	checkStrategies(t, e, "keyspaces", "", map[string]want{cost.NativeTTL: {41062.50, 0, 26779.17, 36135.00, 103976.67}})
	if len(e.Providers) != 1 {
		t.Errorf("provider: keyspaces gave %d providers", len(e.Providers))
	}
	if _, err := os.Stat(filepath.Join(sub, "c.svg")); err != nil {
		t.Errorf("chart key: %v", err)
	}
	// Under a price file the header no longer claims the built-in
	// sheet's date.
	code, out, errOut := cli("cost", "--workload", byFlags)
	if code != 0 || strings.Contains(out, "checked") || !strings.Contains(out, "with "+prices+"'s figures over it") {
		t.Errorf("header under a price file: exit %d %s\n%s", code, errOut, out)
	}
	code, out, _ = cli("cost", "--workload", workload)
	if code != 0 || !strings.Contains(out, "prices checked "+cost.DefaultPrices().Checked) {
		t.Errorf("header with the built-in prices:\n%s", out)
	}
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

// TestCostExampleColdClass runs the cold-class example of docs/cost.md and
// checks that ebb cost prints the saving line the document shows, and
// that with half of the reads going to cold shards the class still saves
// what the document says.
func TestCostExampleColdClass(t *testing.T) {
	doc, cmds := costExample(t, 5)
	code, out, errOut := cli(append([]string{"cost"}, cmds[0]...)...)
	if code != 0 {
		t.Fatalf("ebb cost %s: exit %d, %s", strings.Join(cmds[0], " "), code, errOut)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "in Standard-IA") {
			line = strings.TrimSpace(l)
		}
	}
	if line == "" || !strings.Contains(doc, "\n"+line+"\n") {
		t.Fatalf("ebb cost prints %q, which docs/cost.md does not show; output:\n%s", line, out)
	}
	code, out, errOut = cli(append([]string{"cost"}, append(cmds[0], "--reads-per-second", "100", "--rows-per-read", "100", "--cold-read-share", "0.5")...)...)
	if code != 0 {
		t.Fatalf("with cold reads: exit %d, %s", code, errOut)
	}
	for _, f := range []struct{ out, doc string }{
		{"cold reads 20.53 more", "cold reads cost 20.53 more"},
		{"(saves 106.20 a month)", "class still saves 106.20 a month"},
	} {
		if !strings.Contains(out, f.out) || !strings.Contains(strings.Join(strings.Fields(doc), " "), f.doc) {
			t.Errorf("with half the reads cold: %q missing from the output, or %q from the document:\n%s", f.out, f.doc, out)
		}
	}
}
