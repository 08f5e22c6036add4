package cost

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
	"github.com/ebb-data/ebb/meter"
)

// Provider models.
const (
	DynamoDB  = "dynamodb"
	Keyspaces = "keyspaces"
)

// Capacity modes.
const (
	OnDemand    = "on_demand"
	Provisioned = "provisioned"
)

// Strategies, in the order they are reported.
const (
	// NativeTTL: every row carries a TTL and the provider deletes it some
	// time after it expires.
	NativeTTL = "native_ttl"
	// Shards: ebb's time shards, each dropped whole once its newest row is
	// past retention; rows with their own TTL are hidden, and held until the
	// drop.
	Shards = "shards"
	// ShardsSweeper: ebb's time shards, and ebb's sweeper deleting rows
	// with their own TTL within seconds of expiry.
	ShardsSweeper = "shards_sweeper"
	// NativeTTLSweeper: native TTL for retention, ebb's sweeper for rows
	// with their own TTL.
	NativeTTLSweeper = "native_ttl_sweeper"
)

// Strategies lists every strategy in report order.
var Strategies = []string{NativeTTL, Shards, ShardsSweeper, NativeTTLSweeper}

// StrategyTitles are the strategies' names in tables and charts.
var StrategyTitles = map[string]string{
	NativeTTL:        "native per-row TTL",
	Shards:           "ebb time shards, dropped whole",
	ShardsSweeper:    "ebb shards + sweeper for own-TTL rows",
	NativeTTLSweeper: "ebb sweeper over native TTL",
}

// Model constants. Each is a documented rule or a stated assumption; see
// docs/cost.md.
const (
	// SecondsPerMonth is the providers' billing month, 730 hours.
	SecondsPerMonth = hoursPerMonth * 3600
	hoursPerMonth   = 730
	// GB is the gigabyte storage is billed in.
	GB = 1 << 30
	// DynamoDBItemOverhead is the storage DynamoDB bills per item for its
	// indexing (CapacityUnitCalculations.html).
	DynamoDBItemOverhead = 100
	// EntryBytes is the size of one expiry index entry (its window,
	// due time, table, row key and expiry), an assumption: the sweeper
	// reads entries in 4 KB units.
	EntryBytes = 200
)

// InputError is a bad workload or price figure. Field names it as the
// command line or the price sheet does.
type InputError struct {
	Field string
	Msg   string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Msg }

// Duration is a time.Duration written as a Go duration string ("1008h") in
// JSON and YAML.
type Duration time.Duration

// MarshalText writes d as "1008h".
func (d Duration) MarshalText() ([]byte, error) { return []byte(durfmt.Format(time.Duration(d))), nil }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Workload is what a team expects to run. Field names are the flags of
// `ebb cost` and the keys of its workload file.
type Workload struct {
	// RowsPerSecond is rows written per second, on average.
	RowsPerSecond float64 `json:"rows-per-second" yaml:"rows-per-second"`
	// RowBytes is the row's size as the provider bills it.
	RowBytes int `json:"row-bytes" yaml:"row-bytes"`
	// Retention is how long a row is kept.
	Retention Duration `json:"retention" yaml:"retention"`
	// ReadsPerSecond is queries per second, each returning RowsPerRead
	// rows of one partition.
	ReadsPerSecond float64 `json:"reads-per-second" yaml:"reads-per-second"`
	RowsPerRead    int     `json:"rows-per-read" yaml:"rows-per-read"`
	// OwnTTLShare is the share (0 to 1) of rows written with their own,
	// shorter TTL, OwnTTL.
	OwnTTLShare float64  `json:"own-ttl-share" yaml:"own-ttl-share"`
	OwnTTL      Duration `json:"own-ttl" yaml:"own-ttl"`
	// ShardPeriod is the width of one time shard (an index's
	// table_bucket). Default 168h.
	ShardPeriod Duration `json:"shard-period" yaml:"shard-period"`
	// DynamoDBTTLLag and KeyspacesTTLLag are how long after expiry native
	// TTL deletes a row, on average: storage is paid meanwhile. Defaults
	// 48h ("within a few days") and 240h ("typically within 10 days").
	DynamoDBTTLLag  Duration `json:"dynamodb-ttl-lag" yaml:"dynamodb-ttl-lag"`
	KeyspacesTTLLag Duration `json:"keyspaces-ttl-lag" yaml:"keyspaces-ttl-lag"`
	// Capacity is on_demand (default) or provisioned; Utilization is the
	// share of provisioned capacity used on average (default 0.7).
	Capacity    string  `json:"capacity" yaml:"capacity"`
	Utilization float64 `json:"utilization" yaml:"utilization"`
	// Providers to estimate; default both.
	Providers []string `json:"providers" yaml:"providers"`
	// Tables is how many tables the workload would be spread over without
	// ebb's shared tables, one per tenant say; above 1 the estimate
	// compares them with one shared table (TablesRow). Default 1.
	Tables int `json:"tables" yaml:"tables"`
	// GoneWithin bounds how long past its expiry a row may stay on disk:
	// the expiry-mode comparison names the cheapest mode within it. Zero
	// means no bound.
	GoneWithin Duration `json:"gone-within" yaml:"gone-within"`
	// ColdAfter, when set, estimates moving the shards that ended that
	// long ago to the infrequent-access table class (an index's capacity
	// cold_after), where the provider has one; ColdReadShare is the share
	// (0 to 1) of reads that go to such shards (default 0: reads of recent
	// data).
	ColdAfter     Duration `json:"cold-after" yaml:"cold-after"`
	ColdReadShare float64  `json:"cold-read-share" yaml:"cold-read-share"`
}

// Limits past which a figure is refused as absurd.
const (
	maxRate     = 1e8
	maxRowBytes = 1 << 20 // Keyspaces' row size limit
	dynamoItem  = 400 * 1024
	maxDuration = 20 * 365 * 24 * time.Hour // Keyspaces' longest TTL
	maxLag      = 365 * 24 * time.Hour
	maxTables   = 1_000_000
)

// withDefaults fills zero fields.
func (w Workload) withDefaults() Workload {
	if w.RowsPerRead == 0 && w.ReadsPerSecond > 0 {
		w.RowsPerRead = 1
	}
	if w.OwnTTL == 0 {
		w.OwnTTL = Duration(min(24*time.Hour, time.Duration(w.Retention)))
	}
	if w.ShardPeriod == 0 {
		w.ShardPeriod = Duration(7 * 24 * time.Hour)
	}
	if w.DynamoDBTTLLag == 0 {
		w.DynamoDBTTLLag = Duration(48 * time.Hour)
	}
	if w.KeyspacesTTLLag == 0 {
		w.KeyspacesTTLLag = Duration(240 * time.Hour)
	}
	if w.Capacity == "" {
		w.Capacity = OnDemand
	}
	if w.Utilization == 0 {
		w.Utilization = 0.7
	}
	if len(w.Providers) == 0 {
		w.Providers = []string{DynamoDB, Keyspaces}
	}
	if w.Tables == 0 {
		w.Tables = 1
	}
	return w
}

func bad(field, format string, args ...any) error {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func checkRate(field string, v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return bad(field, "is not a number")
	case v < 0:
		return bad(field, "%g is negative", v)
	case v > maxRate:
		return bad(field, "%g is absurd (at most %g)", v, float64(maxRate))
	}
	return nil
}

func checkDuration(field string, d Duration, lo, hi time.Duration) error {
	switch v := time.Duration(d); {
	case v < lo:
		return bad(field, "%s is below %s", durfmt.Format(v), durfmt.Format(lo))
	case v > hi:
		return bad(field, "%s is absurd (at most %s)", durfmt.Format(v), durfmt.Format(hi))
	}
	return nil
}

// Validate reports the first bad figure of a workload (with its defaults
// applied) as an *InputError.
func (w Workload) Validate() error {
	if w.Utilization != 0 && w.Capacity != Provisioned {
		// On demand bills each request: a utilization would change
		// nothing, and estimating as if it did would mislead.
		return bad("utilization", "%g applies to provisioned capacity only, and the capacity is on demand: set capacity provisioned, or leave utilization out", w.Utilization)
	}
	w = w.withDefaults()
	if err := checkRate("rows-per-second", w.RowsPerSecond); err != nil {
		return err
	}
	if err := checkRate("reads-per-second", w.ReadsPerSecond); err != nil {
		return err
	}
	switch {
	case w.RowBytes < 1:
		return bad("row-bytes", "%d: a row has at least 1 byte", w.RowBytes)
	case w.RowBytes > maxRowBytes:
		return bad("row-bytes", "%d is absurd (a Keyspaces row holds at most %d)", w.RowBytes, maxRowBytes)
	case w.RowsPerRead < 0 || w.RowsPerRead > 10000:
		return bad("rows-per-read", "%d: want 1 to 10000", w.RowsPerRead)
	case math.IsNaN(w.OwnTTLShare) || w.OwnTTLShare < 0 || w.OwnTTLShare > 1:
		return bad("own-ttl-share", "%g: want a share from 0 to 1", w.OwnTTLShare)
	case math.IsNaN(w.Utilization) || w.Utilization <= 0 || w.Utilization > 1:
		return bad("utilization", "%g: want a share above 0, at most 1", w.Utilization)
	case w.Capacity != OnDemand && w.Capacity != Provisioned:
		return bad("capacity", "%q: want %s or %s", w.Capacity, OnDemand, Provisioned)
	case w.Tables < 1:
		return bad("tables", "%d: want 1 or more", w.Tables)
	case w.Tables > maxTables:
		return bad("tables", "%d is absurd (at most %d)", w.Tables, maxTables)
	}
	if err := checkDuration("retention", w.Retention, time.Second, maxDuration); err != nil {
		return err
	}
	if err := checkDuration("own-ttl", w.OwnTTL, time.Second, maxDuration); err != nil {
		return err
	}
	if w.OwnTTL > w.Retention {
		// The bound is the retention, whatever the default (24h).
		return bad("own-ttl", "%s is longer than the retention, %s: a row's own TTL ends it before the retention would",
			durfmt.Format(time.Duration(w.OwnTTL)), durfmt.Format(time.Duration(w.Retention)))
	}
	if err := checkDuration("shard-period", w.ShardPeriod, time.Second, maxDuration); err != nil {
		return err
	}
	if err := checkDuration("dynamodb-ttl-lag", w.DynamoDBTTLLag, 0, maxLag); err != nil {
		return err
	}
	if err := checkDuration("keyspaces-ttl-lag", w.KeyspacesTTLLag, 0, maxLag); err != nil {
		return err
	}
	if err := checkDuration("gone-within", w.GoneWithin, 0, maxDuration); err != nil {
		return err
	}
	if err := checkDuration("cold-after", w.ColdAfter, 0, maxDuration); err != nil {
		return err
	}
	if math.IsNaN(w.ColdReadShare) || w.ColdReadShare < 0 || w.ColdReadShare > 1 {
		return bad("cold-read-share", "%g: want a share from 0 to 1", w.ColdReadShare)
	}
	if w.ColdReadShare > 0 && w.ColdAfter == 0 {
		return bad("cold-read-share", "%g applies with cold-after only", w.ColdReadShare)
	}
	for _, p := range w.Providers {
		switch p {
		case DynamoDB:
			if w.RowBytes > dynamoItem {
				return bad("row-bytes", "%d exceeds DynamoDB's item limit of %d bytes", w.RowBytes, dynamoItem)
			}
		case Keyspaces:
		default:
			return bad("provider", "unknown provider %q; want %s or %s", p, DynamoDB, Keyspaces)
		}
	}
	return nil
}

// Breakdown is one strategy's monthly cost.
type Breakdown struct {
	Strategy string  `json:"strategy"`
	Writes   float64 `json:"writes"`
	Reads    float64 `json:"reads"`
	Storage  float64 `json:"storage"`
	Expiry   float64 `json:"expiry"`
	Total    float64 `json:"total"`
	// StoredGB is the data held in steady state.
	StoredGB float64 `json:"stored_gb"`
}

// PeriodRow is the sharded strategies' cost at one shard period.
type PeriodRow struct {
	ShardPeriod Duration    `json:"shard_period"`
	Strategies  []Breakdown `json:"strategies"`
}

// ProviderEstimate is one provider's estimate.
type ProviderEstimate struct {
	Provider   string      `json:"provider"`
	Strategies []Breakdown `json:"strategies"`
	// ShardPeriods shows how the sharded strategies change with the
	// shard period: storage is held until a shard is dropped.
	ShardPeriods []PeriodRow `json:"shard_periods"`
	// Tables compares, per strategy, Workload.Tables tables of their own
	// with one shared table; only when Workload.Tables is above 1.
	Tables []TablesRow `json:"tables,omitempty"`
	// Modes compares the expiry modes of a list feature or shared table
	// for every row of the workload; CheapestMode is the cheapest meeting
	// Workload.GoneWithin, empty when none does.
	Modes        []ModeBreakdown `json:"modes"`
	CheapestMode string          `json:"cheapest_mode"`
	// ColdClass is what the infrequent-access class does to the shards
	// strategy with Workload.ColdAfter; nil without it, or where the
	// provider has no such class.
	ColdClass *ColdClass `json:"cold_class,omitempty"`
}

// Estimate is the answer of `ebb cost`.
type Estimate struct {
	Workload  Workload           `json:"workload"`
	Region    string             `json:"region"`
	Currency  string             `json:"currency"`
	Checked   string             `json:"prices_checked"`
	Providers []ProviderEstimate `json:"providers"`
}

// model holds a provider's per-second rates for a workload.
type model struct {
	w  Workload
	pp ProviderPrice
	// wu, ru: units per row written, per read; ttl: TTL delete units per
	// row; sweepW, sweepR: units per row the sweeper deletes; stored:
	// bytes held per row; lag: native TTL's delay.
	wu, ru, ttl, sweepW, sweepR float64
	stored                      float64
	lag                         float64
}

func newModel(w Workload, p Prices, provider string) model {
	m := model{w: w, pp: p.provider(provider)}
	m.wu = float64(meter.WriteUnits(w.RowBytes))
	m.ru = float64(meter.ReadUnits(w.RowBytes * w.RowsPerRead))
	if w.ReadsPerSecond == 0 {
		m.ru = 0
	}
	m.stored = float64(w.RowBytes)
	// The sweeper writes an index entry with the row, then deletes the
	// row and the entry: two 1-unit writes and the row's delete; it reads
	// the entries in 4 KB units.
	m.sweepW = 2 + m.wu
	m.sweepR = EntryBytes / 4096.0
	switch provider {
	case DynamoDB:
		m.stored += DynamoDBItemOverhead
		m.ttl = 1 // one delete per item, priced (at zero) by the sheet
		m.lag = time.Duration(w.DynamoDBTTLLag).Seconds()
	case Keyspaces:
		m.ttl = m.wu // one TTL delete per KB of row
		m.lag = time.Duration(w.KeyspacesTTLLag).Seconds()
		// ebb's CQL backend reads a row before a delete-if-expired.
		m.sweepR += float64(meter.ReadUnits(w.RowBytes))
	}
	return m
}

// writeCost is the monthly cost of u write units per second, sustained.
func (m model) writeCost(u float64) float64 {
	if m.w.Capacity == Provisioned {
		return u / m.w.Utilization * hoursPerMonth * m.pp.Provisioned.WritePerHour
	}
	return u * SecondsPerMonth * m.pp.OnDemand.WritePerMillion / 1e6
}

func (m model) readCost(u float64) float64 {
	if m.w.Capacity == Provisioned {
		return u / m.w.Utilization * hoursPerMonth * m.pp.Provisioned.ReadPerHour
	}
	return u * SecondsPerMonth * m.pp.OnDemand.ReadPerMillion / 1e6
}

func (m model) ttlCost(u float64) float64 {
	return u * SecondsPerMonth * m.pp.TTLDeletePerMillion / 1e6
}

// storedGB is the data held in steady state by rows written at rate, each
// held for hold seconds.
func (m model) storedGB(rate, hold float64) float64 { return rate * hold * m.stored / GB }

func (m model) strategy(name string, period time.Duration) Breakdown {
	w := m.w
	r := w.RowsPerSecond
	own, rest := r*w.OwnTTLShare, r*(1-w.OwnTTLShare)
	ret := time.Duration(w.Retention).Seconds()
	ownTTL := time.Duration(w.OwnTTL).Seconds()
	shardHold := ret + period.Seconds()/2
	b := Breakdown{Strategy: name, Writes: m.writeCost(r * m.wu), Reads: m.readCost(w.ReadsPerSecond * m.ru)}
	sweep := m.writeCost(own*m.sweepW) + m.readCost(own*m.sweepR)
	switch name {
	case NativeTTL:
		b.StoredGB = m.storedGB(rest, ret+m.lag) + m.storedGB(own, ownTTL+m.lag)
		b.Expiry = m.ttlCost(r * m.ttl)
	case Shards:
		b.StoredGB = m.storedGB(r, shardHold)
	case ShardsSweeper:
		b.StoredGB = m.storedGB(rest, shardHold) + m.storedGB(own, ownTTL)
		b.Expiry = sweep
	case NativeTTLSweeper:
		b.StoredGB = m.storedGB(rest, ret+m.lag) + m.storedGB(own, ownTTL)
		b.Expiry = m.ttlCost(rest*m.ttl) + sweep
	}
	b.Storage = b.StoredGB * m.pp.StorageGBMonth
	b.Total = b.Writes + b.Reads + b.Storage + b.Expiry
	return b
}

// SensitivityPeriods are the shard periods the sensitivity table shows, as
// far as they are no longer than retention, with the workload's own.
var SensitivityPeriods = []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 30 * 24 * time.Hour}

// Run estimates a workload's monthly cost on each provider under each
// strategy. Bad figures give an *InputError naming the field.
func Run(w Workload, p Prices) (*Estimate, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	w = w.withDefaults()
	est := &Estimate{Workload: w, Region: p.Region, Currency: p.Currency, Checked: p.Checked}
	periods := []time.Duration{time.Duration(w.ShardPeriod)}
	for _, d := range SensitivityPeriods {
		if d <= time.Duration(w.Retention) && !slices.Contains(periods, d) {
			periods = append(periods, d)
		}
	}
	slices.Sort(periods)
	for _, name := range w.Providers {
		m := newModel(w, p, name)
		pe := ProviderEstimate{Provider: name}
		for _, s := range Strategies {
			pe.Strategies = append(pe.Strategies, m.strategy(s, time.Duration(w.ShardPeriod)))
		}
		for _, d := range periods {
			pe.ShardPeriods = append(pe.ShardPeriods, PeriodRow{
				ShardPeriod: Duration(d),
				Strategies:  []Breakdown{m.strategy(Shards, d), m.strategy(ShardsSweeper, d)},
			})
		}
		if w.Tables > 1 {
			for _, s := range Strategies {
				pe.Tables = append(pe.Tables, m.tables(s))
			}
		}
		for _, mode := range Modes {
			pe.Modes = append(pe.Modes, m.mode(mode))
		}
		pe.CheapestMode = cheapest(pe.Modes)
		pe.ColdClass = m.coldClass(time.Duration(w.ShardPeriod))
		est.Providers = append(est.Providers, pe)
	}
	if err := est.finite(); err != nil {
		return nil, err
	}
	return est, nil
}

// finite refuses an estimate holding a NaN or an infinity, which valid
// figures cannot produce; it guards the tables against one anyway.
func (e *Estimate) finite() error {
	check := func(bs []Breakdown) error {
		for _, b := range bs {
			for _, v := range []float64{b.Writes, b.Reads, b.Storage, b.Expiry, b.Total, b.StoredGB} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("cost: %s: the estimate is not a number; the figures are out of range", b.Strategy)
				}
			}
		}
		return nil
	}
	for _, p := range e.Providers {
		if err := check(p.Strategies); err != nil {
			return err
		}
		for _, r := range p.Tables {
			for _, v := range []float64{r.WriteUnits, r.ReadUnits, r.Separate, r.Shared, r.Saved} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("cost: %s: the estimate is not a number; the figures are out of range", r.Strategy)
				}
			}
		}
		for _, r := range p.ShardPeriods {
			if err := check(r.Strategies); err != nil {
				return err
			}
		}
		for _, b := range p.Modes {
			if err := check([]Breakdown{b.Breakdown}); err != nil {
				return err
			}
		}
	}
	return nil
}
