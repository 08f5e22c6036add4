package cost

import "math"

// TablesRow compares, for one strategy, the read and write capacity a
// workload spread over Workload.Tables tables of their own (one per
// tenant, say) costs with what it costs in one shared table, as ebb's
// shared tables hold it (package multitable). Storage and TTL deletes cost
// the same in either layout and are left out; so are the shared table's own
// bookkeeping rows.
//
// On demand a table costs nothing while idle, and the two layouts cost the
// same. Provisioned, each table is billed for whole capacity units, at
// least one read and one write unit however idle it is (both providers'
// minimum: ProvisionedThroughput in the DynamoDB API reference,
// CapacitySpecification in the Keyspaces one), so many small tables pay
// that floor many times over.
type TablesRow struct {
	Strategy string `json:"strategy"`
	// WriteUnits and ReadUnits are the capacity units per second the
	// strategy uses in all: the rows' writes and reads and the sweeper's.
	WriteUnits float64 `json:"write_units"`
	ReadUnits  float64 `json:"read_units"`
	// SharedWCU and SharedRCU are the units provisioned for the shared
	// table, TableWCU and TableRCU for each table of its own: the units
	// used over the utilization, rounded up, at least one. Zero on demand.
	SharedWCU int64 `json:"shared_wcu"`
	SharedRCU int64 `json:"shared_rcu"`
	TableWCU  int64 `json:"table_wcu"`
	TableRCU  int64 `json:"table_rcu"`
	// Separate and Shared are the monthly capacity cost of all the tables
	// of their own and of the one shared table; Saved is Separate - Shared.
	Separate float64 `json:"separate"`
	Shared   float64 `json:"shared"`
	Saved    float64 `json:"saved"`
}

// units returns the capacity units per second a strategy uses, written
// and read.
func (m model) units(name string) (w, r float64) {
	own := m.w.RowsPerSecond * m.w.OwnTTLShare
	w = m.w.RowsPerSecond * m.wu
	r = m.w.ReadsPerSecond * m.ru
	if name == ShardsSweeper || name == NativeTTLSweeper {
		w += own * m.sweepW
		r += own * m.sweepR
	}
	return w, r
}

// provisionedUnits is what a table using u units per second is provisioned:
// u over the utilization, in whole units, at least one. A figure within a
// billionth of a whole number is that number, so that floating point does
// not buy a unit that arithmetic does not need.
func provisionedUnits(u, utilization float64) int64 {
	return max(1, int64(math.Ceil(u/utilization-1e-9)))
}

// tables compares the layouts for one strategy.
func (m model) tables(name string) TablesRow {
	w, r := m.units(name)
	row := TablesRow{Strategy: name, WriteUnits: w, ReadUnits: r}
	n := float64(m.w.Tables)
	if m.w.Capacity != Provisioned {
		row.Shared = m.writeCost(w) + m.readCost(r)
		row.Separate = row.Shared
		return row
	}
	pw, pr := m.pp.Provisioned.WritePerHour, m.pp.Provisioned.ReadPerHour
	row.SharedWCU, row.SharedRCU = provisionedUnits(w, m.w.Utilization), provisionedUnits(r, m.w.Utilization)
	row.TableWCU, row.TableRCU = provisionedUnits(w/n, m.w.Utilization), provisionedUnits(r/n, m.w.Utilization)
	row.Shared = hoursPerMonth * (float64(row.SharedWCU)*pw + float64(row.SharedRCU)*pr)
	row.Separate = n * hoursPerMonth * (float64(row.TableWCU)*pw + float64(row.TableRCU)*pr)
	row.Saved = row.Separate - row.Shared
	return row
}
