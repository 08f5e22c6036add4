package meter

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Model is a provider's billing model the meter counts for.
type Model uint8

// Provider models.
const (
	// ModelDynamoDB is DynamoDB on demand, strongly consistent reads.
	ModelDynamoDB Model = iota
	// ModelKeyspaces is Amazon Keyspaces on demand, reads at LOCAL_QUORUM.
	ModelKeyspaces
	numModels
)

var modelNames = [numModels]string{"dynamodb", "keyspaces"}

func (m Model) String() string { return modelNames[m] }

// Models returns every provider model.
func Models() []Model { return []Model{ModelDynamoDB, ModelKeyspaces} }

// Unit is what a counter counts.
type Unit uint8

// Units.
const (
	// UnitWrite is write request units.
	UnitWrite Unit = iota
	// UnitRead is read request units.
	UnitRead
	// UnitNativeTTLDelete is what native TTL would have billed to delete
	// the rows written, had it expired them instead of ebb (see the package
	// comment): TTL delete units on Keyspaces (one per KB of row), items
	// on DynamoDB (where they are free).
	UnitNativeTTLDelete
	numUnits
)

var unitNames = [numUnits]string{"write", "read", "native_ttl_delete"}

func (u Unit) String() string { return unitNames[u] }

// Op is the kind of store operation counted.
type Op uint8

// Operations.
const (
	OpUpsert Op = iota
	OpDelete
	// OpSweepDelete is a delete-if-expired, what the expiry sweeper issues.
	OpSweepDelete
	// OpConditional is a conditional write.
	OpConditional
	OpGet
	// OpQuery is Query and Scan.
	OpQuery
	OpQueryIndex
	OpDeletePartition
	OpCreateTable
	OpDropTable
	numOps
)

var opNames = [numOps]string{"upsert", "delete", "sweep_delete", "conditional", "get", "query", "query_index", "delete_partition", "create_table", "drop_table"}

func (o Op) String() string { return opNames[o] }

// counters are the meter's tallies. Every field is updated atomically.
type counters struct {
	units    [numModels][numClasses][numOps][numUnits]atomic.Int64
	requests [numClasses][numOps]atomic.Int64
	rows     [numClasses][numOps]atomic.Int64
	bytes    [numClasses][numOps]atomic.Int64
}

// Usage is a snapshot of the meter: what every class of table and kind of
// operation has cost since Since, on each provider model.
type Usage struct {
	// Since is when counting started (the process opened its store).
	Since time.Time `json:"since"`
	// At is when the snapshot was taken.
	At time.Time `json:"at"`
	// Operations holds one entry per class and operation seen, sorted by
	// class, then operation.
	Operations []OpUsage `json:"operations"`
	// Storage is what each class of table physically holds, when asked
	// for; nil otherwise.
	Storage []StorageUsage `json:"storage,omitempty"`
}

// OpUsage is what one kind of operation on one class of table cost.
type OpUsage struct {
	Class string `json:"class"`
	Op    string `json:"op"`
	// Requests counts store calls; a write batch counts once, under the kind
	// of its first mutation.
	Requests int64 `json:"requests"`
	// Rows counts rows written (mutations) or returned.
	Rows int64 `json:"rows"`
	// Bytes is the DynamoDB item size of those rows.
	Bytes int64 `json:"bytes"`
	// Units holds, per provider model ("dynamodb", "keyspaces"), the units
	// billed, by unit name ("write", "read", "native_ttl_delete").
	Units map[string]map[string]int64 `json:"units"`
}

// StorageUsage is what one class of table physically holds.
type StorageUsage struct {
	Class  string `json:"class"`
	Tables int    `json:"tables"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
}

// Total sums the units of one model and unit over every operation, or over
// those of the given classes when any are named.
func (u Usage) Total(model, unit string, classes ...string) int64 {
	var n int64
	for _, o := range u.Operations {
		if len(classes) > 0 && !contains(classes, o.Class) {
			continue
		}
		n += o.Units[model][unit]
	}
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *counters) snapshot(since, at time.Time) Usage {
	u := Usage{Since: since, At: at, Operations: []OpUsage{}}
	for cl := range numClasses {
		for op := range numOps {
			req := c.requests[cl][op].Load()
			if req == 0 {
				continue
			}
			o := OpUsage{
				Class: Class(cl).String(), Op: Op(op).String(), Requests: req,
				Rows: c.rows[cl][op].Load(), Bytes: c.bytes[cl][op].Load(),
				Units: map[string]map[string]int64{},
			}
			for m := range numModels {
				units := map[string]int64{}
				for un := range numUnits {
					units[Unit(un).String()] = c.units[m][cl][op][un].Load()
				}
				o.Units[Model(m).String()] = units
			}
			u.Operations = append(u.Operations, o)
		}
	}
	return u
}

// collector exports the counters to Prometheus at scrape time, so that the
// data path pays for atomic adds only.
type collector struct {
	c        *counters
	units    *prometheus.Desc
	requests *prometheus.Desc
}

func newCollector(c *counters) *collector {
	return &collector{
		c: c,
		units: prometheus.NewDesc("ebb_request_units_total",
			"Request units the store operations would bill, by provider model (dynamodb, keyspaces), unit (write, read, and native_ttl_delete: what native TTL would have billed to expire the rows written) and table class.",
			[]string{"provider_model", "unit", "class"}, nil),
		requests: prometheus.NewDesc("ebb_metered_requests_total",
			"Store calls counted by the meter, by table class and operation.",
			[]string{"class", "op"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.units
	ch <- c.requests
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for m := range numModels {
		for un := range numUnits {
			for cl := range numClasses {
				var n int64
				for op := range numOps {
					n += c.c.units[m][cl][op][un].Load()
				}
				ch <- prometheus.MustNewConstMetric(c.units, prometheus.CounterValue, float64(n),
					Model(m).String(), Unit(un).String(), Class(cl).String())
			}
		}
	}
	// Every series is exported from the start, at zero, so that a rate
	// sees the first event.
	for cl := range numClasses {
		for op := range numOps {
			ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(c.c.requests[cl][op].Load()),
				Class(cl).String(), Op(op).String())
		}
	}
}
