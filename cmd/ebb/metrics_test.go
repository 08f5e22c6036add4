package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/ebb-data/ebb/internal/testselect"
	"github.com/ebb-data/ebb/store/cql/cqltest"
	"github.com/ebb-data/ebb/store/dynamo/dynamotest"
)

// The operator-facing files the metric tests hold to what the server
// exports.
var (
	apiDoc     = filepath.Join("..", "..", "docs", "api.md")
	dashboard  = filepath.Join("..", "..", "docs", "grafana", "ebb.json")
	alertRules = filepath.Join("..", "..", "docs", "prometheus", "alerts.yml")
	alertTests = filepath.Join("..", "..", "docs", "prometheus", "alerts_test.yml")
)

// family is one ebb_ metric as /metrics exports it.
type family struct {
	Name, Type, Help string
	Labels           []string // sorted, without the histogram's le
}

// TestMetrics runs `ebb serve` on every backend, drives every feature,
// reads /metrics and checks that docs/api.md documents exactly the ebb_
// metrics exported (name, type and labels), that no help text names Go
// code, and that every metric the Grafana dashboard and the alert rules
// query is one the server exports. It needs every backend, so it runs
// only when EBB_TEST_BACKENDS selects them all, as `make test` does.
func TestMetrics(t *testing.T) {
	exported := map[string]family{}
	for _, b := range metricBackends(t) {
		p := startServe(t, append([]string{"--addr", "127.0.0.1:0", "--reconcile-interval", "1s", "--sweep-interval", "200ms"}, b.args...)...)
		exerciseAll(t, p)
		for name, f := range scrape(t, p.url) {
			if prev, ok := exported[name]; ok && (prev.Type != f.Type || !slices.Equal(prev.Labels, f.Labels)) {
				t.Errorf("%s is exported as %s %v on one backend and %s %v on %s", name, prev.Type, prev.Labels, f.Type, f.Labels, b.name)
			}
			exported[name] = f
		}
	}

	t.Run("api.md", func(t *testing.T) {
		documented := documentedMetrics(t)
		var missing []string
		for _, name := range sortedKeys(exported) {
			f := exported[name]
			d, ok := documented[name]
			if !ok {
				missing = append(missing, fmt.Sprintf("| `%s` | %s | %s | %s |", name, f.Type, backticked(f.Labels), f.Help))
				continue
			}
			if d.Type != f.Type {
				t.Errorf("docs/api.md: %s is a %s, the server exports a %s", name, d.Type, f.Type)
			}
			if !slices.Equal(d.Labels, f.Labels) {
				t.Errorf("docs/api.md: %s has labels %v, the server exports %v", name, d.Labels, f.Labels)
			}
		}
		if len(missing) > 0 {
			t.Errorf("docs/api.md (## Metrics) lacks a row for metrics the server exports; add, with the meaning in the reader's words:\n%s", strings.Join(missing, "\n"))
		}
		for _, name := range sortedKeys(documented) {
			if _, ok := exported[name]; !ok {
				t.Errorf("docs/api.md documents %s, which no backend's server exports", name)
			}
		}
	})

	t.Run("help texts", func(t *testing.T) {
		// A Go method or type in a help text (RemoveByValue, Store.Get)
		// means nothing to an operator.
		goName := regexp.MustCompile(`\b[A-Z][a-z]+[A-Z][A-Za-z]*\b|\b[A-Z][A-Za-z]*\.[A-Z][A-Za-z]*\b|\(\)`)
		// Mid-sentence, a capitalised verb is a method name.
		words := regexp.MustCompile(`\s(Add|Get|Put|Scan|Write|Read|Store|Delete|Remove|Reconcile)\b`)
		for _, name := range sortedKeys(exported) {
			help := exported[name].Help
			// Acronyms and product names are not code.
			cleaned := strings.NewReplacer("DynamoDB", "", "BatchWriteItem", "", "CQL", "", "WAL", "", "HTTP", "").Replace(help)
			if m := goName.FindString(cleaned); m != "" {
				t.Errorf("%s: help text %q names %q, which reads as Go code", name, help, m)
			}
			if m := words.FindString(cleaned); m != "" {
				t.Errorf("%s: help text %q names %q, which reads as a Go method", name, help, m)
			}
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		for _, q := range dashboardQueries(t) {
			checkQuery(t, "docs/grafana/ebb.json", q, exported)
		}
	})

	t.Run("alert rules", func(t *testing.T) {
		for _, r := range loadAlertRules(t) {
			checkQuery(t, "docs/prometheus/alerts.yml "+r.Alert, r.Expr, exported)
		}
	})
}

// TestDeletedResourcesLeaveNoSeries creates an index, a list feature and a
// shared table on a real server, writes to each, deletes them, and checks
// that /metrics keeps no series with a label naming any of them.
func TestDeletedResourcesLeaveNoSeries(t *testing.T) {
	p := startServe(t, "--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data"))
	now := time.Now().UTC().Format(time.RFC3339Nano)
	steps := []struct {
		method, path string
		body         any
		want         int
	}{
		{"PUT", "/v1/indexes/gone_ix", map[string]any{"table_bucket": "1h", "partition_bucket": "10m", "retention": "24h"}, 201},
		{"POST", "/v1/indexes/gone_ix/events", map[string]any{"events": []map[string]any{
			{"index_id": "a", "event_id": "e1", "timestamp": now, "payload": "AAE="}}}, 200},
		{"POST", "/v1/indexes/gone_ix/events", map[string]any{"events": []map[string]any{
			{"index_id": "a", "event_id": "e0", "timestamp": "2001-01-01T00:00:00Z", "payload": "AAE="}}}, 422},
		{"PUT", "/v1/list-features/gone_ent/gone_feat/v1", map[string]any{"ttl": "1h"}, 201},
		{"POST", "/v1/lists/gone_ent/gone_feat/v1/u1/items", map[string]any{"items": []map[string]any{
			{"value": "cDE=", "timestamp": now}}}, 200},
		{"PUT", "/v1/tables/gone_tbl", map[string]any{"default_ttl": "1h"}, 201},
		{"PUT", "/v1/tables/gone_tbl/items/k1", map[string]any{"timestamp": now, "attributes": map[string]string{"a": "b"}}, 200},
	}
	deletes := []struct{ method, path string }{
		{"DELETE", "/v1/indexes/gone_ix"},
		{"DELETE", "/v1/list-features/gone_ent/gone_feat/v1"},
		{"DELETE", "/v1/tables/gone_tbl"},
	}
	for _, s := range steps {
		if status, body := send(t, s.method, p.url+s.path, s.body); status != s.want {
			t.Fatalf("%s %s: %d %s, want %d", s.method, s.path, status, body, s.want)
		}
	}
	if named := seriesNaming(t, p.url, "gone_"); len(named) == 0 {
		t.Fatal("no series names the index before it is deleted: the check below would prove nothing")
	}
	for _, d := range deletes {
		if status, body := send(t, d.method, p.url+d.path, nil); status != 204 {
			t.Fatalf("%s %s: %d %s", d.method, d.path, status, body)
		}
	}
	if named := seriesNaming(t, p.url, "gone_"); len(named) > 0 {
		t.Fatalf("series of deleted resources remain:\n%s", strings.Join(named, "\n"))
	}
}

// seriesNaming returns the series on /metrics with a label value that
// contains sub.
func seriesNaming(t *testing.T, url, sub string) []string {
	t.Helper()
	status, body := get(t, url+"/metrics", "")
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if strings.Contains(lp.GetValue(), sub) {
					out = append(out, fmt.Sprintf("%s{%s=%q}", name, lp.GetName(), lp.GetValue()))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestAlertRules loads docs/prometheus/alerts.yml with promtool, and runs
// its unit tests (docs/prometheus/alerts_test.yml): each alert fires on
// synthetic series that should raise it, and stays quiet on a healthy
// server's. promtool comes from EBB_PROMTOOL or PATH
// (scripts/with-promtool.sh installs it).
func TestAlertRules(t *testing.T) {
	promtool := promtoolPath(t)
	for _, args := range [][]string{
		{"check", "rules", alertRules},
		{"test", "rules", alertTests},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
	// Every alert is exercised by the unit tests.
	tests, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range loadAlertRules(t) {
		if !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
			t.Errorf("alert %s has no unit test in %s", r.Alert, alertTests)
		}
	}
}

// TestDashboardQueriesParse checks that every query of the Grafana
// dashboard is valid PromQL: with Grafana's variables given values, each
// becomes a recording rule that promtool checks.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := promtoolPath(t)
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*", "$index", ".*")
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, q := range dashboardQueries(t) {
		if strings.HasPrefix(q, "label_values(") {
			// A Grafana function, not PromQL: its selector is.
			inner := strings.TrimSuffix(strings.TrimPrefix(q, "label_values("), ")")
			q = inner[:strings.LastIndex(inner, ",")]
		}
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: vars.Replace(q)})
	}
	file := map[string]any{"groups": []map[string]any{{"name": "dashboard", "rules": rules}}}
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("dashboard queries do not parse: %v\n%s\nrules:\n%s", err, out, b)
	}
}

// promtoolPath returns Prometheus's promtool: EBB_PROMTOOL, or the one on
// PATH. It fails the test, never skips it, when there is none.
func promtoolPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EBB_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not on PATH and EBB_PROMTOOL is not set: run `make test`, or scripts/with-promtool.sh go test ./cmd/ebb/, which installs Debian's prometheus package when promtool is missing")
	}
	return p
}

type metricBackend struct {
	name string
	args []string
}

// metricBackends are the backends whose servers export metrics of their
// own: each runs, so that their metrics are held to the docs too. The
// remote ones are required, as in the rest of this package's tests.
func metricBackends(t *testing.T) []metricBackend {
	t.Helper()
	// Every backend's metrics together must match the docs, so the test
	// needs them all: it is skipped unless each is selected, and fails
	// when a selected one has no endpoint.
	testselect.Need(t, testselect.Pebble)
	hosts := strings.Join(cqltest.Require(t), ",")
	return []metricBackend{
		{"pebble", []string{"--data", filepath.Join(t.TempDir(), "data")}},
		{"dynamodb", []string{"--backend", "dynamodb", "--dynamodb-endpoint", dynamotest.Require(t),
			"--dynamodb-table-prefix", dynamotest.Prefix()}},
		{"cql", []string{"--backend", "cql", "--cql-hosts", hosts, "--cql-create-keyspace", "--cql-consistency", "ONE",
			"--cql-keyspace", fmt.Sprintf("ebbt_metrics_%06x", rand.Uint32()&0xffffff)}},
	}
}

// exerciseAll drives every feature of the API once, so that every metric
// with labels has a series: an index written to (and refused), planned and
// applied; a list feature added to, read and removed from; a shared table
// written, read, listed and deleted from; the admin views; a route that
// does not exist.
func exerciseAll(t *testing.T, p *proc) {
	t.Helper()
	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	steps := []struct {
		method, path string
		body         any
		want         int
	}{
		{"PUT", "/v1/indexes/ev", map[string]any{"table_bucket": "1h", "partition_bucket": "10m", "retention": "24h"}, 201},
		{"POST", "/v1/indexes/ev/events", map[string]any{"events": []map[string]any{
			{"index_id": "acct/1", "event_id": "e1", "timestamp": ts(-time.Minute), "payload": "AAE="},
		}}, 200},
		{"POST", "/v1/indexes/ev/events", map[string]any{"events": []map[string]any{
			{"index_id": "acct/1", "event_id": "e0", "timestamp": ts(-48 * time.Hour), "payload": "AAE="},
		}}, 422},
		{"GET", "/v1/indexes/ev/events?index_id=acct%2F1&from=" + ts(-time.Hour) + "&to=" + ts(time.Minute), nil, 200},
		{"POST", "/v1/indexes/ev/events", map[string]any{"events": []map[string]any{
			{"index_id": "acct/9", "event_id": "e9", "timestamp": ts(-time.Minute), "payload": "AAE="}}}, 200},
		{"DELETE", "/v1/indexes/ev/events?index_id=acct%2F9", nil, 200},
		{"POST", "/v1/indexes/ev/reconcile", nil, 200},
		{"POST", "/v1/indexes/ev/reconcile?dry_run=false", nil, 200},
		{"PUT", "/v1/list-features/user/seen/v1", map[string]any{"ttl": "720h"}, 201},
		{"POST", "/v1/lists/user/seen/v1/u1/items", map[string]any{"items": []map[string]any{
			{"value": "cDE=", "timestamp": ts(-time.Second)},
			{"value": "cDI=", "timestamp": ts(0)},
			{"value": "cDM=", "timestamp": ts(-1000 * time.Hour)},
		}}, 200},
		{"GET", "/v1/lists/user/seen/v1/u1/items", nil, 200},
		{"DELETE", "/v1/lists/user/seen/v1/u1/items?value=cDE%3D", nil, 204},
		{"PUT", "/v1/tables/sessions", map[string]any{"default_ttl": "1h"}, 201},
		{"PUT", "/v1/tables/sessions/items/k1", map[string]any{"timestamp": ts(0), "attributes": map[string]string{"user": "u1"}}, 200},
		{"GET", "/v1/tables/sessions/items/k1", nil, 200},
		{"GET", "/v1/tables/sessions/items", nil, 200},
		{"DELETE", "/v1/tables/sessions/items/k1", nil, 204},
		{"GET", "/v1/admin/tables", nil, 200},
		{"GET", "/v1/admin/cluster", nil, 200},
		{"GET", "/v1/no-such-route", nil, 404},
		// A TTL rewrite of a table holding one item, waited for below.
		{"PUT", "/v1/tables/sessions/items/k2", map[string]any{"timestamp": ts(0), "attributes": map[string]string{"user": "u2"}}, 200},
		{"PUT", "/v1/tables/sessions", map[string]any{"default_ttl": "2h", "rewrite": true}, 200},
	}
	for _, s := range steps {
		var status int
		var body string
		if s.body == nil && s.method == "GET" {
			status, body = get(t, p.url+s.path, "")
		} else {
			status, body = send(t, s.method, p.url+s.path, s.body)
		}
		if status != s.want {
			t.Fatalf("%s %s: %d %s, want %d\nserver log:\n%s", s.method, s.path, status, body, s.want, tail(p.stderr.String(), 30))
		}
	}
	// The rewrite ends (its first batch waits the cache TTL, 2 s), so that
	// its counters have their series.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := get(t, p.url+"/v1/tables/sessions", "")
		if strings.Contains(body, `"state":"done"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table's TTL rewrite did not end within 60 s: %s\nserver log:\n%s", body, tail(p.stderr.String(), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The background roles report their leases once they have run.
	deadline = time.Now().Add(30 * time.Second)
	for {
		if status, _ := get(t, p.url+"/readyz", ""); status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 30 s\nserver log:\n%s", tail(p.stderr.String(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scrape reads /metrics and returns its ebb_ metrics.
func scrape(t *testing.T, url string) map[string]family {
	t.Helper()
	status, body := get(t, url+"/metrics", "")
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	out := map[string]family{}
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "ebb_") {
			continue
		}
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		out[name] = family{Name: name, Type: typeName(mf.GetType()), Help: mf.GetHelp(), Labels: sortedKeys(labels)}
	}
	return out
}

func typeName(t dto.MetricType) string {
	switch t {
	case dto.MetricType_COUNTER:
		return "counter"
	case dto.MetricType_GAUGE:
		return "gauge"
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return "histogram"
	case dto.MetricType_SUMMARY:
		return "summary"
	}
	return "untyped"
}

// metricsRow is a row of the table under "## Metrics" in docs/api.md:
// | `name` | type | `label`, `label` | meaning |
var metricsRow = regexp.MustCompile("^\\|\\s*`(ebb_[a-z0-9_]+)`\\s*\\|\\s*(counter|gauge|histogram|summary)\\s*\\|([^|]*)\\|\\s*([^|]+?)\\s*\\|\\s*$")

// documentedMetrics reads the metrics table of docs/api.md.
func documentedMetrics(t *testing.T) map[string]family {
	t.Helper()
	doc, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]family{}
	in := false
	label := regexp.MustCompile("`([a-z_]+)`")
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Metrics"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `ebb_") {
			continue
		}
		m := metricsRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/api.md:%d: a metrics row is | `ebb_name` | counter, gauge or histogram | `label`, ... | meaning |, one metric a row; got %q", i+1, line)
			continue
		}
		if _, dup := out[m[1]]; dup {
			t.Errorf("docs/api.md:%d: %s has two rows", i+1, m[1])
		}
		var labels []string
		for _, l := range label.FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, l[1])
		}
		slices.Sort(labels)
		out[m[1]] = family{Name: m[1], Type: m[2], Help: m[4], Labels: labels}
	}
	if len(out) == 0 {
		t.Error("docs/api.md has no metrics table under ## Metrics")
	}
	return out
}

// dashboardQueries returns every PromQL query of the Grafana dashboard:
// the panels' targets and the template variables'.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Panels        []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboard, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("dashboard lacks a uid, title or schemaVersion")
	}
	var qs []string
	graphs := 0
	for _, p := range d.Panels {
		if p.Type == "row" || p.Type == "text" {
			continue
		}
		graphs++
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			qs = append(qs, tg.Expr)
		}
	}
	if graphs == 0 {
		t.Fatal("dashboard has no panels")
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		var s string
		if json.Unmarshal(v.Query, &s) == nil {
			qs = append(qs, s)
		} else if json.Unmarshal(v.Query, &q) == nil {
			qs = append(qs, q.Query)
		} else {
			t.Errorf("template variable %s: query %s is neither a string nor an object with a query", v.Name, v.Query)
		}
	}
	return qs
}

type alertRule struct {
	Alert string `yaml:"alert"`
	Expr  string `yaml:"expr"`
}

func loadAlertRules(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", alertRules, err)
	}
	var out []alertRule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", alertRules)
	}
	return out
}

var metricName = regexp.MustCompile(`\bebb_[a-zA-Z0-9_]+`)

// checkQuery checks that every ebb_ metric a PromQL query names is
// exported: a histogram's _bucket, _sum and _count series by the
// histogram's name.
func checkQuery(t *testing.T, where, q string, exported map[string]family) {
	t.Helper()
	names := metricName.FindAllString(q, -1)
	if len(names) == 0 {
		t.Errorf("%s: query %q names no ebb_ metric", where, q)
	}
	for _, n := range names {
		if _, ok := exported[n]; ok {
			continue
		}
		found := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && exported[base].Type == "histogram" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: query %q names %s, which the server does not export", where, q, n)
		}
	}
}

func backticked(labels []string) string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = "`" + l + "`"
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
