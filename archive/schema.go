package archive

import (
	"github.com/ebb-data/ebb/store"
)

// Schema is a table's spec as a manifest records it, in words a reader of
// the JSON understands: column types by name ("text", "int64",
// "timestamp", "bytes") and the clustering order ("asc", "desc").
type Schema struct {
	PartitionKey    []SchemaColumn `json:"partition_key"`
	Clustering      []SchemaColumn `json:"clustering"`
	ClusteringOrder string         `json:"clustering_order"`
	Values          []SchemaColumn `json:"values"`
	NeverExpires    bool           `json:"never_expires,omitempty"`
}

// SchemaColumn is one column of a Schema.
type SchemaColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

var typesByName = map[string]store.Type{}

func init() {
	for _, t := range []store.Type{store.TypeText, store.TypeInt64, store.TypeTimestamp, store.TypeBytes} {
		typesByName[t.String()] = t
	}
}

func schemaOf(spec store.TableSpec) Schema {
	cols := func(cs []store.Column) []SchemaColumn {
		out := make([]SchemaColumn, len(cs))
		for i, c := range cs {
			out[i] = SchemaColumn{Name: c.Name, Type: c.Type.String()}
		}
		return out
	}
	return Schema{PartitionKey: cols(spec.PartitionKey), Clustering: cols(spec.Clustering), ClusteringOrder: spec.ClusteringOrder.String(),
		Values: cols(spec.Values), NeverExpires: spec.NeverExpires}
}

// spec is the table spec of s, named table. A type it does not know is
// left invalid (zero), which the Parquet layout and the store refuse.
func (s Schema) spec(table string) store.TableSpec {
	cols := func(cs []SchemaColumn) []store.Column {
		out := make([]store.Column, len(cs))
		for i, c := range cs {
			out[i] = store.Column{Name: c.Name, Type: typesByName[c.Type]}
		}
		return out
	}
	spec := store.TableSpec{Name: table, PartitionKey: cols(s.PartitionKey), Clustering: cols(s.Clustering), Values: cols(s.Values), NeverExpires: s.NeverExpires}
	if s.ClusteringOrder == store.Desc.String() {
		spec.ClusteringOrder = store.Desc
	}
	return spec
}
