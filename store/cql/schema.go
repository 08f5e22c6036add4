package cql

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ebb-data/ebb/store"
)

// Layout. An ebb table is a CQL table of the same name (quoted, so case
// is kept) in the Store's keyspace:
//
//	"<partition key columns>"    typed: text, bigint, timestamp, blob
//	"<clustering columns>"       typed, CLUSTERING ORDER BY the spec's order
//	"_x"         bigint  the row marker's expiry, Unix ms (never: max int64)
//	"<value>"    typed   a value column
//	"_e_<value>" bigint  that value's expiry, Unix ms (never: max int64);
//	                     written with the value, in the same statement
//	"_w"    set<uuid>    the tags of recent conditional upserts, one random
//	                     tag per write, each with a short TTL of its own, so
//	                     that an outcome the cluster left unknown can be
//	                     recognised (see condition.go)
//
// Every cell (marker, value and its expiry) carries USING TTL as a physical
// backstop (see ttl.go); expiry itself is resolved on read from the
// millisecond columns. A table with indexes has a companion table (see
// index.go) with the same partition key, so that a row and its index
// entries form one storage mutation. Names starting with reservedPrefix
// belong to the Store (catalog, companions) and are refused as ebb table
// names; every other ebb name fits CQL's 48 characters as it is.

const (
	// reservedPrefix starts the names of the Store's own tables.
	reservedPrefix = "ebb__"
	catalogTable   = reservedPrefix + "catalog"
	indexPrefix    = reservedPrefix + "ix_"

	colMarker = "_x"
	colTag    = "_w"
	// Companion table columns.
	colIndexNo  = "_i"
	colIndexVal = "_v"
	colIndexExp = "_e"

	// never is the stored expiry of a part that never expires.
	never = int64(^uint64(0) >> 1)
)

// quote quotes a CQL identifier. ebb names and the Store's own names hold
// no double quote, so none needs escaping.
func quote(name string) string { return `"` + name + `"` }

func expCol(value string) string { return "_e_" + value }

// indexTableName is the companion table of an ebb table: a digest of the
// name keeps it within 48 characters whatever the name's length.
func indexTableName(table string) string {
	sum := sha256.Sum256([]byte(table))
	return indexPrefix + hex.EncodeToString(sum[:16])
}

func cqlType(t store.Type) string {
	switch t {
	case store.TypeText:
		return "text"
	case store.TypeInt64:
		return "bigint"
	case store.TypeTimestamp:
		return "timestamp"
	case store.TypeBytes:
		return "blob"
	}
	panic(fmt.Sprintf("cql: unknown type %v", t)) // specs are validated first
}

// schema holds a table's names and the statement fragments built from its
// spec once, when the spec is cached.
type schema struct {
	spec  store.TableSpec
	ks    string
	data  string // "ks"."name"
	index string // "ks"."ebb__ix_…"; empty without indexes
	// partWhere is `"p1" = ? AND …`; rowWhere adds the clustering columns.
	partWhere, rowWhere string
	// ckList is `"c1", "c2"` (empty without clustering).
	ckList string
	// rowCols selects what a read needs: clustering, marker, then each value
	// and its expiry.
	rowCols string
	// untagged is set once a conditional upsert found no "_w" column: the
	// table was created before conditional writes were tagged.
	untagged atomic.Bool
}

func (sc *schema) TableSpec() store.TableSpec { return sc.spec }

func newSchema(ks string, spec store.TableSpec) *schema {
	sc := &schema{spec: spec, ks: ks, data: quote(ks) + "." + quote(spec.Name)}
	if len(spec.Indexes) > 0 {
		sc.index = quote(ks) + "." + quote(indexTableName(spec.Name))
	}
	var pw, rw, ck, cols []string
	for _, c := range spec.PartitionKey {
		pw = append(pw, quote(c.Name)+" = ?")
	}
	rw = append(rw, pw...)
	for _, c := range spec.Clustering {
		rw = append(rw, quote(c.Name)+" = ?")
		ck = append(ck, quote(c.Name))
	}
	cols = append(cols, ck...)
	cols = append(cols, quote(colMarker))
	for _, v := range spec.Values {
		cols = append(cols, quote(v.Name), quote(expCol(v.Name)))
	}
	sc.partWhere = strings.Join(pw, " AND ")
	sc.rowWhere = strings.Join(rw, " AND ")
	sc.ckList = strings.Join(ck, ", ")
	sc.rowCols = strings.Join(cols, ", ")
	return sc
}

// tableOptions renders the WITH clause of a CREATE TABLE (without the
// clustering order): the default TTL and, on Keyspaces, the custom
// properties the table needs there: TTL only when its rows may expire
// (Keyspaces cannot turn it off again, and it adds bytes to every row).
func tableOptions(p Provider, defaultTTL time.Duration, neverExpires bool, margin time.Duration) []string {
	var opts []string
	if defaultTTL > 0 {
		// Every write carries USING TTL, so this default only catches
		// writes made outside ebb; it still says what the table is for.
		opts = append(opts, fmt.Sprintf("default_time_to_live = %d", ttlSeconds(defaultTTL.Milliseconds(), 0, margin.Milliseconds(), maxTTLSeconds)))
	}
	if p == Keyspaces {
		// TTL must be switched on before any USING TTL is accepted, and
		// client-side timestamps before USING TIMESTAMP and WRITETIME,
		// which every write carries to order a batch's mutations.
		ttl := "'ttl': {'status': 'enabled'}, "
		if neverExpires {
			ttl = ""
		}
		opts = append(opts, "CUSTOM_PROPERTIES = {'capacity_mode': {'throughput_mode': 'PAY_PER_REQUEST'}, "+
			ttl+"'client_side_timestamps': {'status': 'enabled'}}")
	}
	return opts
}

// createTableCQL returns the statements that create a table: the data
// table, then its companion index table when it has indexes.
func createTableCQL(ks string, spec store.TableSpec, p Provider, margin time.Duration, overrides map[Role]string) []string {
	sc := newSchema(ks, spec)
	order := "ASC"
	if spec.ClusteringOrder == store.Desc {
		order = "DESC"
	}
	var cols, pk, ck, co []string
	for _, c := range spec.PartitionKey {
		cols = append(cols, quote(c.Name)+" "+cqlType(c.Type))
		pk = append(pk, quote(c.Name))
	}
	for _, c := range spec.Clustering {
		cols = append(cols, quote(c.Name)+" "+cqlType(c.Type))
		ck = append(ck, quote(c.Name))
		co = append(co, quote(c.Name)+" "+order)
	}
	cols = append(cols, quote(colMarker)+" bigint")
	for _, v := range spec.Values {
		cols = append(cols, quote(v.Name)+" "+cqlType(v.Type), quote(expCol(v.Name))+" bigint")
	}
	cols = append(cols, quote(colTag)+" set<uuid>")
	key := "(" + strings.Join(pk, ", ") + ")"
	if len(ck) > 0 {
		key += ", " + strings.Join(ck, ", ")
	}
	// The companion holds the row's index entries, which live and die
	// with it: it gets the same role options.
	role := tableOptionsFor(p, spec, margin, overrides)
	opts := append(tableOptions(p, spec.DefaultTTL, spec.NeverExpires, margin), role...)
	if len(co) > 0 {
		opts = append([]string{"CLUSTERING ORDER BY (" + strings.Join(co, ", ") + ")"}, opts...)
	}
	stmt := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s))", sc.data, strings.Join(cols, ", "), key)
	if len(opts) > 0 {
		stmt += " WITH " + strings.Join(opts, " AND ")
	}
	out := []string{stmt}
	if sc.index == "" {
		return out
	}
	// The companion: same partition key (so a row and its entries are one
	// mutation), then index number, value, and the row's clustering key in
	// the table's order, so a lookup reads entries in clustering order.
	icols := cols[:len(spec.PartitionKey)]
	icols = append(icols[:len(icols):len(icols)], quote(colIndexNo)+" int", quote(colIndexVal)+" blob")
	for _, c := range spec.Clustering {
		icols = append(icols, quote(c.Name)+" "+cqlType(c.Type))
	}
	icols = append(icols, quote(colIndexExp)+" bigint")
	ikey := "(" + strings.Join(pk, ", ") + "), " + quote(colIndexNo) + ", " + quote(colIndexVal)
	ico := []string{quote(colIndexNo) + " ASC", quote(colIndexVal) + " ASC"}
	if len(ck) > 0 {
		ikey += ", " + strings.Join(ck, ", ")
		ico = append(ico, co...)
	}
	iopts := append([]string{"CLUSTERING ORDER BY (" + strings.Join(ico, ", ") + ")"}, tableOptions(p, 0, spec.NeverExpires, margin)...)
	iopts = append(iopts, role...)
	out = append(out, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s)) WITH %s",
		sc.index, strings.Join(icols, ", "), ikey, strings.Join(iopts, " AND ")))
	return out
}

// dropTableCQL returns the statements that drop a table and its companion.
// The companion is dropped whether or not the spec had indexes: the name
// may have been used before by a table that had.
func dropTableCQL(ks, name string) []string {
	return []string{
		fmt.Sprintf("DROP TABLE IF EXISTS %s.%s", quote(ks), quote(name)),
		fmt.Sprintf("DROP TABLE IF EXISTS %s.%s", quote(ks), quote(indexTableName(name))),
	}
}

// createKeyspaceCQL creates the keyspace with the given replication map, or
// the provider's default.
func createKeyspaceCQL(ks string, p Provider, replication string) string {
	if replication == "" {
		replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
		if p == Keyspaces {
			replication = "{'class': 'SingleRegionStrategy'}"
		}
	}
	return fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = %s", quote(ks), replication)
}

// createCatalogCQL creates the catalog: one row per ebb table, holding its
// spec, last capacity and capacity-switch history as JSON.
func createCatalogCQL(ks string, p Provider) string {
	stmt := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.%s ("name" text PRIMARY KEY, "spec" text, "capacity" text, "switches" text)`,
		quote(ks), quote(catalogTable))
	if p == Keyspaces {
		stmt += " WITH CUSTOM_PROPERTIES = {'capacity_mode': {'throughput_mode': 'PAY_PER_REQUEST'}}"
	}
	return stmt
}
