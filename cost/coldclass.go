package cost

import "time"

// ClassPrice is what a provider charges in its infrequent-access table
// class (DynamoDB Standard-IA): storage for less, requests for more.
type ClassPrice struct {
	OnDemand       OnDemandPrice    `json:"on_demand" yaml:"on_demand"`
	Provisioned    ProvisionedPrice `json:"provisioned" yaml:"provisioned"`
	StorageGBMonth float64          `json:"storage_gb_month" yaml:"storage_gb_month"`
}

// ColdClass is what moving an index's shards to the infrequent-access
// class once they ended ColdAfter ago (an index's capacity cold_after)
// does to the shards strategy's monthly cost. A row spends its shard's
// last Retention - ColdAfter in the class whatever its place in the shard
// (a shard moves ColdAfter after its end and is dropped Retention after
// it); writes always go to the hot shard, in the standard class; the
// share ColdReadShare of reads goes to cold shards at the class's read
// price. Class changes themselves are not billed.
type ColdClass struct {
	ColdAfter Duration `json:"cold_after"`
	// ColdGB is the data held in the class in steady state.
	ColdGB float64 `json:"cold_gb"`
	// StorageSaved is what the class's storage price saves on it;
	// ReadsExtra what the cold reads cost more.
	StorageSaved float64 `json:"storage_saved"`
	ReadsExtra   float64 `json:"reads_extra"`
	// Shards is the shards strategy's total without the class, WithClass
	// with it, and Saved the difference (negative: the class costs more).
	Shards    float64 `json:"shards"`
	WithClass float64 `json:"with_class"`
	Saved     float64 `json:"saved"`
}

// coldClass estimates ColdClass for the workload, nil where the provider
// has no class prices or the workload names no cold_after.
func (m model) coldClass(period time.Duration) *ColdClass {
	w := m.w
	ia := m.pp.InfrequentAccess
	if w.ColdAfter == 0 || ia.StorageGBMonth == 0 {
		return nil
	}
	base := m.strategy(Shards, period)
	ret, cold := time.Duration(w.Retention).Seconds(), time.Duration(w.ColdAfter).Seconds()
	c := &ColdClass{ColdAfter: w.ColdAfter, Shards: base.Total}
	if cold < ret {
		c.ColdGB = m.storedGB(w.RowsPerSecond, ret-cold)
	}
	c.StorageSaved = c.ColdGB * (m.pp.StorageGBMonth - ia.StorageGBMonth)
	coldReads := w.ReadsPerSecond * w.ColdReadShare * m.ru
	if w.Capacity == Provisioned {
		c.ReadsExtra = coldReads / w.Utilization * hoursPerMonth * (ia.Provisioned.ReadPerHour - m.pp.Provisioned.ReadPerHour)
	} else {
		c.ReadsExtra = coldReads * SecondsPerMonth * (ia.OnDemand.ReadPerMillion - m.pp.OnDemand.ReadPerMillion) / 1e6
	}
	c.Saved = c.StorageSaved - c.ReadsExtra
	c.WithClass = c.Shards - c.Saved
	return c
}

// validClass checks the class prices like the others.
func validClass(provider string, c ClassPrice) error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"infrequent_access.on_demand.write_per_million", c.OnDemand.WritePerMillion},
		{"infrequent_access.on_demand.read_per_million", c.OnDemand.ReadPerMillion},
		{"infrequent_access.provisioned.write_per_hour", c.Provisioned.WritePerHour},
		{"infrequent_access.provisioned.read_per_hour", c.Provisioned.ReadPerHour},
		{"infrequent_access.storage_gb_month", c.StorageGBMonth},
	} {
		if err := checkPrice("prices."+provider+"."+f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}
