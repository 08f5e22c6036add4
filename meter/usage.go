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

// unit is the unit an operation's request units are counted in: reads in
// read units, writes in write units.
func (o Op) unit() Unit {
	switch o {
	case OpGet, OpQuery, OpQueryIndex:
		return UnitRead
	}
	return UnitWrite
}

// shape is a common form of call that the data path counts with a single
// atomic add; reading the counters expands it into the requests, rows and
// units it stands for. Most calls on the hot paths are of one of these
// shapes, so that a point read or a lone write costs two atomic adds (its
// shape and its bytes) instead of six or seven.
type shape uint8

const (
	// shapeOne is one request of one row costing one unit on each model,
	// in the operation's unit: a read of one row within 4 KB, or a lone
	// mutation within 1 KB on both models.
	shapeOne shape = iota
	// shapeOneTTL is shapeOne for an upsert that native TTL would, in the
	// end, delete: one native TTL delete unit more on each model.
	shapeOneTTL
	// shapeNone is a read that found no row: one request, one read unit
	// on each model.
	shapeNone
	// shapeUnit is a read of several rows within 4 KB: one request, one
	// read unit on each model; its rows are counted in rows.
	shapeUnit
	numShapes
)

// counters are the meter's tallies, one set per class of table and
// operation. Every field is updated atomically. What a call costs is in
// units, requests, rows and bytes, or, for a call of a common shape, in
// shapes and bytes; totals adds the two up.
type counters [numClasses]classCounters

// classCounters are the tallies of one class of table. A table's metadata
// points at its class's (tableMeta.c), so that the hot paths index them by
// constants only.
type classCounters [numOps]opCounters

// opCounters are the tallies of one operation on one class of table,
// together in 128 bytes, so that a call touches one or two cache lines of
// them. All the counters are one allocation of 7.5 KB, which the runtime
// gives a page of its own, so that each opCounters starts a cache line (a
// test holds this).
type opCounters struct {
	requests, rows, bytes atomic.Int64
	shapes                [numShapes]atomic.Int64
	units                 [numModels][numUnits]atomic.Int64
	_                     [3]int64
}

// opTotals is what one class of table and kind of operation has cost.
type opTotals struct {
	requests, rows, bytes int64
	units                 [numModels][numUnits]int64
}

// totals reads the counters of one class and operation, expanding the calls
// counted by shape. Every figure is a sum of counters that only grow, so it
// only grows too, as a Prometheus counter must.
func (c *counters) totals(cl Class, op Op) opTotals {
	k := &c[cl][op]
	var t opTotals
	one := k.shapes[shapeOne].Load()
	ttl := k.shapes[shapeOneTTL].Load()
	none := k.shapes[shapeNone].Load()
	unit := k.shapes[shapeUnit].Load()
	t.requests = k.requests.Load() + one + ttl + none + unit
	t.rows = k.rows.Load() + one + ttl
	t.bytes = k.bytes.Load()
	u := op.unit()
	for m := range numModels {
		for un := range numUnits {
			t.units[m][un] = k.units[m][un].Load()
		}
		t.units[m][u] += one + ttl + none + unit
		t.units[m][UnitNativeTTLDelete] += ttl
	}
	return t
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
			t := c.totals(cl, op)
			// A kind of mutation may be billed only within batches led by
			// another kind (under which the batch's request counts): its
			// rows show it was seen.
			if t.requests == 0 && t.rows == 0 {
				continue
			}
			o := OpUsage{
				Class: cl.String(), Op: op.String(), Requests: t.requests,
				Rows: t.rows, Bytes: t.bytes,
				Units: map[string]map[string]int64{},
			}
			for m := range numModels {
				units := map[string]int64{}
				for un := range numUnits {
					units[un.String()] = t.units[m][un]
				}
				o.Units[m.String()] = units
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
	var units [numModels][numUnits][numClasses]int64
	var requests [numClasses][numOps]int64
	for cl := range numClasses {
		for op := range numOps {
			t := c.c.totals(cl, op)
			requests[cl][op] = t.requests
			for m := range numModels {
				for un := range numUnits {
					units[m][un][cl] += t.units[m][un]
				}
			}
		}
	}
	for m := range numModels {
		for un := range numUnits {
			for cl := range numClasses {
				ch <- prometheus.MustNewConstMetric(c.units, prometheus.CounterValue, float64(units[m][un][cl]),
					m.String(), un.String(), cl.String())
			}
		}
	}
	// Every series is exported from the start, at zero, so that a rate
	// sees the first event.
	for cl := range numClasses {
		for op := range numOps {
			ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(requests[cl][op]),
				cl.String(), op.String())
		}
	}
}
