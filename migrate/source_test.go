package migrate

import (
	"errors"
	"testing"
	"time"

	"github.com/ebb-data/ebb/store"
)

// TestLegacyConfigValidate checks each kind's names and mapping.
func TestLegacyConfigValidate(t *testing.T) {
	dyn := &Mapping{IndexID: "pk", SortKey: "sk", SortKeyFormat: SortTimestampEventID, Payload: "body", TTL: "expires"}
	cql := &Mapping{IndexID: "account", SortKey: "ts", EventID: "event_id", Payload: "body"}
	with := func(m *Mapping, f func(*Mapping)) *Mapping {
		c := *m
		f(&c)
		return &c
	}
	cases := []struct {
		name string
		cfg  LegacyConfig
		ok   bool
	}{
		{"table", LegacyConfig{Kind: KindTable, Table: "events_legacy"}, true},
		{"table with a shard's name", LegacyConfig{Kind: KindTable, Table: "events_1"}, false},
		{"table with a mapping", LegacyConfig{Kind: KindTable, Table: "events_legacy", Mapping: cql}, false},
		{"negative ttl", LegacyConfig{Kind: KindTable, Table: "events_legacy", TTL: -time.Hour}, false},
		{"dynamodb", LegacyConfig{Kind: KindDynamoDB, Table: "events-v1", Mapping: dyn}, true},
		{"dynamodb without a format", LegacyConfig{Kind: KindDynamoDB, Table: "events-v1", Mapping: with(dyn, func(m *Mapping) { m.SortKeyFormat = "" })}, false},
		{"dynamodb without a ttl attribute", LegacyConfig{Kind: KindDynamoDB, Table: "events-v1", Mapping: with(dyn, func(m *Mapping) { m.TTL = "" })}, false},
		{"cql", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Mapping: cql}, true},
		{"cql on another cluster", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Endpoint: "10.0.0.1,10.0.0.2:9142", Mapping: cql}, true},
		{"cql with a format and a ttl column", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Mapping: with(cql, func(m *Mapping) {
			m.SortKeyFormat, m.TTL = SortTimestampMs, "body"
		})}, true},
		{"cql text sort key", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Mapping: with(cql, func(m *Mapping) {
			m.SortKeyFormat, m.EventID = SortTimestampEventID, ""
		})}, true},
		{"cql without a keyspace", LegacyConfig{Kind: KindCQL, Table: "events_v1", Mapping: cql}, false},
		{"cql with a quote", LegacyConfig{Kind: KindCQL, Table: `shop.ev"x`, Mapping: cql}, false},
		{"cql with a region", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Region: "eu-west-1", Mapping: cql}, false},
		{"cql with an empty host", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Endpoint: "10.0.0.1,", Mapping: cql}, false},
		{"cql without a mapping", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1"}, false},
		{"cql timestamp_ms without an event id", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Mapping: with(cql, func(m *Mapping) {
			m.SortKeyFormat, m.EventID = SortTimestampMs, ""
		})}, false},
		{"cql with a quoted column", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Mapping: with(cql, func(m *Mapping) { m.Payload = `b"` })}, false},
		{"cql with an unknown format", LegacyConfig{Kind: KindCQL, Table: "shop.events_v1", Mapping: with(cql, func(m *Mapping) { m.SortKeyFormat = "iso" })}, false},
		{"unknown kind", LegacyConfig{Kind: "mongodb", Table: "events"}, false},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !c.ok && !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want store.ErrInvalid", c.name, err)
		}
	}
}

// TestLegacyConfigOwnedBy: an index owns the embedded table
// OwnTable(index) and nothing else; names that only start or end like it
// belong to no index.
func TestLegacyConfigOwnedBy(t *testing.T) {
	dyn := &Mapping{IndexID: "pk", SortKey: "sk", SortKeyFormat: SortTimestampEventID, Payload: "body", TTL: "expires"}
	cases := []struct {
		index string
		cfg   LegacyConfig
		owned bool
	}{
		{"events", LegacyConfig{Kind: KindTable, Table: "events_legacy"}, true},
		{"events", LegacyConfig{Kind: KindTable, Table: "events_legacy", TTL: time.Hour}, true},
		{"events", LegacyConfig{Kind: KindTable, Table: "other_legacy"}, false},
		{"events", LegacyConfig{Kind: KindTable, Table: "events_legacy_x"}, false},
		{"events", LegacyConfig{Kind: KindTable, Table: "events_old"}, false},
		{"ev", LegacyConfig{Kind: KindTable, Table: "events_legacy"}, false},
		{"events_legacy", LegacyConfig{Kind: KindTable, Table: "events_legacy"}, false},
		{"events", LegacyConfig{Kind: KindTable, Table: "events_legacy", Endpoint: "http://127.0.0.1:1"}, false},
		{"events", LegacyConfig{Kind: KindDynamoDB, Table: "events_legacy", Mapping: dyn}, false},
		{"events", LegacyConfig{Kind: KindCQL, Table: "ks.events_legacy", Mapping: dyn}, false},
	}
	for _, c := range cases {
		if got := c.cfg.OwnedBy(c.index); got != c.owned {
			t.Errorf("%s owns %+v: %v, want %v", c.index, c.cfg, got, c.owned)
		}
	}
	if err := (LegacyConfig{Kind: KindTable, Table: OwnTable("abcdefghijklmnopqrstuvwxyz01234")}).Validate(); err != nil {
		t.Errorf("the own table of the longest index name: %v", err)
	}
}
