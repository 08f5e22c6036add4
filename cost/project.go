package cost

import (
	"fmt"

	"github.com/ebb-data/ebb/meter"
)

// Projection is a running server's metered usage projected onto a month,
// on one provider's on-demand prices.
type Projection struct {
	Provider string `json:"provider"`
	// Writes, Reads and Expiry are what ebb's traffic costs a month at the
	// rate observed; Expiry is the expiry index's writes and reads and the
	// sweeper's deletes, already inside Writes and Reads. Storage is what
	// the tables hold now, for a month (zero without storage figures).
	Writes  float64 `json:"writes"`
	Reads   float64 `json:"reads"`
	Expiry  float64 `json:"expiry"`
	Storage float64 `json:"storage"`
	Total   float64 `json:"total"`
	// NativeTTL is what the same traffic would cost with native per-row
	// TTL: the same writes and reads without ebb's expiry index and sweeper,
	// plus the TTL deletes of every row ebb expires itself, and the same
	// storage. Saved is NativeTTL - Total: what ebb saved, or, negative,
	// what its promptness cost.
	NativeTTL float64 `json:"native_ttl"`
	Saved     float64 `json:"saved"`
	// Modes and CheapestMode compare the expiry modes for this traffic,
	// when asked for (Live.CompareModes).
	Modes        []ModeCost `json:"modes,omitempty"`
	CheapestMode string     `json:"cheapest_mode,omitempty"`
}

// Live is the answer of `ebb cost --from`.
type Live struct {
	Since        string       `json:"since"`
	At           string       `json:"at"`
	Seconds      float64      `json:"seconds"`
	Region       string       `json:"region"`
	Currency     string       `json:"currency"`
	Checked      string       `json:"prices_checked"`
	Projections  []Projection `json:"projections"`
	StorageKnown bool         `json:"storage_known"`
}

// Project turns metered usage into a monthly bill per provider model, on
// on-demand prices, beside what native TTL would have cost.
func Project(u meter.Usage, p Prices) (*Live, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	secs := u.At.Sub(u.Since).Seconds()
	if secs <= 0 {
		return nil, fmt.Errorf("cost: the usage covers no time (since %s, at %s)", u.Since, u.At)
	}
	scale := SecondsPerMonth / secs
	live := &Live{
		Since: u.Since.UTC().Format("2006-01-02T15:04:05Z07:00"), At: u.At.UTC().Format("2006-01-02T15:04:05Z07:00"),
		Seconds: secs, Region: p.Region, Currency: p.Currency, Checked: p.Checked, StorageKnown: u.Storage != nil,
	}
	var storedGB float64
	for _, s := range u.Storage {
		storedGB += float64(s.Bytes) / GB
	}
	for _, name := range []string{DynamoDB, Keyspaces} {
		pp := p.provider(name)
		wp, rp, tp := pp.OnDemand.WritePerMillion/1e6, pp.OnDemand.ReadPerMillion/1e6, pp.TTLDeletePerMillion/1e6
		var pr Projection
		pr.Provider = name
		var nativeW, nativeR, ttl float64
		for _, o := range u.Operations {
			w, r := float64(o.Units[name]["write"]), float64(o.Units[name]["read"])
			ttl += float64(o.Units[name]["native_ttl_delete"])
			pr.Writes += w * scale * wp
			pr.Reads += r * scale * rp
			if o.Class == meter.ClassExpiryIndex.String() || o.Op == meter.OpSweepDelete.String() {
				pr.Expiry += (w*wp + r*rp) * scale
				continue
			}
			nativeW += w
			nativeR += r
		}
		pr.Storage = storedGB * pp.StorageGBMonth
		pr.Total = pr.Writes + pr.Reads + pr.Storage
		pr.NativeTTL = (nativeW*wp+nativeR*rp+ttl*tp)*scale + pr.Storage
		pr.Saved = pr.NativeTTL - pr.Total
		live.Projections = append(live.Projections, pr)
	}
	return live, nil
}
