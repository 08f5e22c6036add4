package cost

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
)

// defaultSheet is the price sheet: the only place a price appears.
//
//go:embed prices.json
var defaultSheet []byte

// Prices is a price sheet: what each provider charges, in one region and
// currency, with where the figures come from and when they were checked.
type Prices struct {
	Region    string        `json:"region" yaml:"region"`
	Currency  string        `json:"currency" yaml:"currency"`
	Checked   string        `json:"checked" yaml:"checked"`
	Sources   []string      `json:"sources" yaml:"sources"`
	DynamoDB  ProviderPrice `json:"dynamodb" yaml:"dynamodb"`
	Keyspaces ProviderPrice `json:"keyspaces" yaml:"keyspaces"`
}

// OnDemandPrice prices on-demand requests.
type OnDemandPrice struct {
	// WritePerMillion and ReadPerMillion price a million request units.
	WritePerMillion float64 `json:"write_per_million" yaml:"write_per_million"`
	ReadPerMillion  float64 `json:"read_per_million" yaml:"read_per_million"`
}

// ProvisionedPrice prices provisioned capacity.
type ProvisionedPrice struct {
	// WritePerHour and ReadPerHour price one capacity unit for an hour.
	WritePerHour float64 `json:"write_per_hour" yaml:"write_per_hour"`
	ReadPerHour  float64 `json:"read_per_hour" yaml:"read_per_hour"`
}

// ProviderPrice is one provider's prices.
type ProviderPrice struct {
	OnDemand            OnDemandPrice    `json:"on_demand" yaml:"on_demand"`
	Provisioned         ProvisionedPrice `json:"provisioned" yaml:"provisioned"`
	StorageGBMonth      float64          `json:"storage_gb_month" yaml:"storage_gb_month"`
	PITRGBMonth         float64          `json:"pitr_gb_month" yaml:"pitr_gb_month"`
	TTLDeletePerMillion float64          `json:"ttl_delete_per_million" yaml:"ttl_delete_per_million"`
	// InfrequentAccess prices the infrequent-access table class where the
	// provider has one (DynamoDB Standard-IA); the zero value where it has
	// none.
	InfrequentAccess ClassPrice `json:"infrequent_access,omitzero" yaml:"infrequent_access,omitempty"`
}

// maxPrice bounds every figure: no unit of these services costs anywhere
// near 1,000 a month or a million requests, so a larger figure is a typo.
const maxPrice = 1000

// DefaultPrices returns the built-in sheet (cost/prices.json).
func DefaultPrices() Prices {
	var p Prices
	if err := json.Unmarshal(defaultSheet, &p); err != nil {
		panic("cost: the built-in price sheet is malformed: " + err.Error())
	}
	return p
}

// LoadPrices reads a price sheet in JSON or YAML (by extension: .json,
// .yaml or .yml) over the built-in one: the figures it gives replace the
// built-in ones, the others stay. A file that cannot be read, or a key that
// is unknown or of the wrong shape, gives a *FileError; a negative, absurd
// or non-numeric figure an *InputError naming it.
func LoadPrices(path string) (Prices, error) {
	p := DefaultPrices()
	if err := decodeFile(path, "prices", &p); err != nil {
		return Prices{}, err
	}
	if err := p.Validate(); err != nil {
		return Prices{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Validate reports the first figure that is negative, not a number or
// absurdly large, as an *InputError naming it.
func (p Prices) Validate() error {
	for _, pr := range []struct {
		name string
		pp   ProviderPrice
	}{{"dynamodb", p.DynamoDB}, {"keyspaces", p.Keyspaces}} {
		for _, f := range []struct {
			name string
			v    float64
		}{
			{"on_demand.write_per_million", pr.pp.OnDemand.WritePerMillion},
			{"on_demand.read_per_million", pr.pp.OnDemand.ReadPerMillion},
			{"provisioned.write_per_hour", pr.pp.Provisioned.WritePerHour},
			{"provisioned.read_per_hour", pr.pp.Provisioned.ReadPerHour},
			{"storage_gb_month", pr.pp.StorageGBMonth},
			{"pitr_gb_month", pr.pp.PITRGBMonth},
			{"ttl_delete_per_million", pr.pp.TTLDeletePerMillion},
		} {
			if err := checkPrice("prices."+pr.name+"."+f.name, f.v); err != nil {
				return err
			}
		}
		if err := validClass(pr.name, pr.pp.InfrequentAccess); err != nil {
			return err
		}
	}
	return nil
}

// checkPrice refuses a figure that is negative, not a number or absurdly
// large, as an *InputError naming field.
func checkPrice(field string, v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return &InputError{Field: field, Msg: "is not a number"}
	case v < 0:
		return &InputError{Field: field, Msg: fmt.Sprintf("%g is negative", v)}
	case v > maxPrice:
		return &InputError{Field: field, Msg: fmt.Sprintf("%g is absurd (at most %d)", v, maxPrice)}
	}
	return nil
}

// provider returns the prices of a provider by name.
func (p Prices) provider(name string) ProviderPrice {
	if name == Keyspaces {
		return p.Keyspaces
	}
	return p.DynamoDB
}
