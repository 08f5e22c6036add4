package cost

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebb-data/ebb/meter"
)

func TestDefaultPrices(t *testing.T) {
	p := DefaultPrices()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.Region != "us-east-1" || p.Checked == "" || len(p.Sources) == 0 {
		t.Errorf("the sheet lacks its region, date or sources: %+v", p)
	}
	if p.DynamoDB.TTLDeletePerMillion != 0 {
		t.Error("DynamoDB TTL deletes are free")
	}
}

func TestLoadPricesMerges(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"p.json": `{"keyspaces": {"on_demand": {"write_per_million": 1.5}}}`,
		"p.yaml": "keyspaces:\n  on_demand:\n    write_per_million: 1.5\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := LoadPrices(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		def := DefaultPrices()
		if p.Keyspaces.OnDemand.WritePerMillion != 1.5 || p.Keyspaces.OnDemand.ReadPerMillion != def.Keyspaces.OnDemand.ReadPerMillion ||
			p.DynamoDB != def.DynamoDB {
			t.Errorf("%s: the file's figure replaces the built-in one and nothing else: %+v", name, p)
		}
	}
}

func TestPricesRefused(t *testing.T) {
	p := DefaultPrices()
	p.DynamoDB.StorageGBMonth = math.NaN()
	var ie *InputError
	if err := p.Validate(); !errors.As(err, &ie) || ie.Field != "prices.dynamodb.storage_gb_month" {
		t.Errorf("NaN storage price: %v", err)
	}
	p = DefaultPrices()
	p.Keyspaces.Provisioned.ReadPerHour = 5000
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "prices.keyspaces.provisioned.read_per_hour: 5000 is absurd") {
		t.Errorf("absurd price: %v", err)
	}
}

func TestProvisioned(t *testing.T) {
	w := Workload{RowsPerSecond: 700, RowBytes: 1024, Retention: Duration(24 * time.Hour), Capacity: Provisioned, Providers: []string{DynamoDB}}
	e, err := Run(w, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	// 700 WCU at 70% utilization: 1,000 WCU × 730 h × $0.00065 = $474.50.
	if got := e.Providers[0].Strategies[0].Writes; math.Abs(got-474.50) > 0.005 {
		t.Errorf("provisioned writes %.4f, want 474.50", got)
	}
}

func TestProvisionedUnits(t *testing.T) {
	for _, c := range []struct {
		used, utilization float64
		want              int64
	}{
		{0, 0.7, 1},       // the providers' minimum
		{0.1, 0.7, 1},     // an idle tenant's table
		{175, 0.7, 250},   // 250.00000000000003 in floating point
		{100, 0.7, 143},   // 142.86
		{0.7 * 3, 0.7, 3}, // exactly three
		{0.7*3 + 0.01, 0.7, 4},
	} {
		if got := provisionedUnits(c.used, c.utilization); got != c.want {
			t.Errorf("%g units used at %g: %d provisioned, want %d", c.used, c.utilization, got, c.want)
		}
	}
}

func TestTablesValidated(t *testing.T) {
	w := Workload{RowsPerSecond: 1, RowBytes: 100, Retention: Duration(time.Hour)}
	for n, want := range map[int]string{-1: "tables: -1: want 1 or more", 2_000_000: "tables: 2000000 is absurd"} {
		w.Tables = n
		var ie *InputError
		if err := w.Validate(); !errors.As(err, &ie) || ie.Field != "tables" || !strings.Contains(err.Error(), want) {
			t.Errorf("%d tables: %v, want %q", n, err, want)
		}
	}
}

func TestProject(t *testing.T) {
	since := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	u := meter.Usage{Since: since, At: since.Add(time.Hour), Operations: []meter.OpUsage{
		{Class: "index_shard", Op: "upsert", Units: map[string]map[string]int64{
			"dynamodb":  {"write": 3600, "native_ttl_delete": 3600},
			"keyspaces": {"write": 3600, "native_ttl_delete": 7200},
		}},
		{Class: "expiry_index", Op: "upsert", Units: map[string]map[string]int64{
			"dynamodb": {"write": 360}, "keyspaces": {"write": 360},
		}},
	}}
	live, err := Project(u, DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	// One unit a second is 2,628,000 a month: $1.6425 at $0.625 a million.
	for _, p := range live.Projections {
		want := 1.6425 * 1.1
		if math.Abs(p.Total-want) > 1e-9 || math.Abs(p.Expiry-0.16425) > 1e-9 {
			t.Errorf("%s: total %v expiry %v, want %v and 0.16425", p.Provider, p.Total, p.Expiry, want)
		}
		native := 1.6425
		if p.Provider == Keyspaces {
			native += 2 * 2.628 * 0.275 // two TTL delete units a second
		}
		if math.Abs(p.NativeTTL-native) > 1e-9 || math.Abs(p.Saved-(native-want)) > 1e-9 {
			t.Errorf("%s: native %v saved %v, want %v", p.Provider, p.NativeTTL, p.Saved, native)
		}
	}
	if _, err := Project(meter.Usage{Since: since, At: since}, DefaultPrices()); err == nil {
		t.Error("usage over no time was projected")
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	w, err := LoadWorkload(write("w.yaml", "rows-per-second: 2.5\nrow-bytes: 10\nretention: 36h\nproviders: [keyspaces]\ntables: 3\n"))
	if err != nil || w.RowsPerSecond != 2.5 || w.RowBytes != 10 || w.Retention != Duration(36*time.Hour) ||
		len(w.Providers) != 1 || w.Providers[0] != Keyspaces || w.Tables != 3 {
		t.Fatalf("workload %+v, %v", w, err)
	}
	if w, err = LoadWorkload(write("w.json", `{"rows-per-second": 1e3, "retention": "1h", "row-bytes": 7}`)); err != nil || w.RowsPerSecond != 1000 {
		t.Fatalf("workload %+v, %v", w, err)
	}
	for _, c := range []struct {
		load  func(string) error
		name  string
		body  string
		field string
	}{
		{loadW, "a.yaml", "row-bytes: many\n", "row-bytes"},
		{loadW, "b.json", `{"providers": ["dynamodb", 3]}`, "providers[1]"},
		{loadW, "c.yaml", "retention: 3600\n", "retention"},
		{loadP, "d.json", `{"dynamodb": {"on_demand": {"write_per_milion": 1}}}`, "prices.dynamodb.on_demand.write_per_milion"},
		{loadP, "e.yaml", "keyspaces: [1]\n", "prices.keyspaces"},
		{loadP, "f.json", `{"dynamodb": `, ""},
	} {
		err := c.load(write(c.name, c.body))
		var fe *FileError
		if !errors.As(err, &fe) || fe.Field != c.field || fe.Path != filepath.Join(dir, c.name) {
			t.Errorf("%s: %v, want a *FileError on %q", c.name, err, c.field)
		}
	}
}

func loadW(path string) error { _, err := LoadWorkload(path); return err }
func loadP(path string) error { _, err := LoadPrices(path); return err }
