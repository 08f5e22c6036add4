// Package main is the cqldisk command, which measures what leaves a
// Cassandra node's disk, and when, for each table role of ebb's CQL backend (see store/cql's Role): the
// bytes of each table's data directory over time, with the table options
// a stock table gets (none) beside those ebb chooses, written and expired
// or deleted the way ebb does. It must run on the node's machine, since it
// reads the node's data directory (found in system_views.settings).
//
//	scripts/cql-disk.sh
//
// starts a throw-away node (scripts/with-cassandra.sh) and runs it; it
// prints a Markdown table, the figures of docs/backends.md.
//
// Every table is written for -write at a steady pace; list rows and
// shared-table rows carry a TTL of -ttl (native expiry, as on CQL by
// default); the expiry index's entries are deleted -ttl after they are
// written, when due, as the sweeper does; the shard is dropped once
// written.
// Each table flushes its memtable every -flush (memtable_flush_period_in_ms)
// so that data reaches the disk, as a busy node's memtables do, and then
// Cassandra compacts as it does on its own; nothing else is triggered.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/expiry"
	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/cql"
)

var (
	ttl     = flag.Duration("ttl", time.Minute, "TTL of list and shared-table rows")
	write   = flag.Duration("write", 2*time.Minute, "how long each table is written")
	observe = flag.Duration("observe", 8*time.Minute, "how long sizes are sampled, from the start")
	every   = flag.Duration("every", 30*time.Second, "sampling interval")
	rate    = flag.Int("rate", 100, "rows written per second per table")
	flush   = flag.Duration("flush", 10*time.Second, "memtable flush period of every table")
	valueN  = flag.Int("value", 1000, "bytes of each row's value (random, so compression keeps them)")
)

// variant is a set of table options: the stock one (none of ebb's) or
// ebb's.
type variant struct {
	name string
	ks   string
	st   *cql.Store
}

func main() {
	flag.Parse()
	hosts := strings.Split(os.Getenv("EBB_CQL_HOSTS"), ",")
	if hosts[0] == "" {
		log.Fatal("cqldisk: EBB_CQL_HOSTS is not set (run scripts/cql-disk.sh)")
	}
	ctx := context.Background()
	suffix := time.Now().UTC().Format("0102150405")

	stock := map[cql.Role]string{}
	for _, r := range cql.Roles() {
		stock[r] = ""
	}
	variants := []*variant{{name: "stock"}, {name: "ebb"}}
	for _, v := range variants {
		v.ks = "ebb_disk_" + v.name + "_" + suffix
		o := cql.DefaultOptions()
		o.Hosts, o.Keyspace, o.CreateKeyspace = hosts, v.ks, true
		o.TTLMargin = time.Second
		if v.name == "stock" {
			o.TableOptions = stock
		}
		st, err := cql.Open(ctx, o)
		if err != nil {
			log.Fatalf("cqldisk: open %s: %v", v.name, err)
		}
		defer st.Close()
		v.st = st
	}

	cluster := gocql.NewCluster(hosts...)
	cluster.Timeout = 30 * time.Second
	sess, err := cluster.CreateSession()
	if err != nil {
		log.Fatalf("cqldisk: session: %v", err)
	}
	defer sess.Close()
	dataDir := dataDirectory(sess)

	specs := roleSpecs()
	for _, v := range variants {
		for _, r := range cql.Roles() {
			spec := specs[r]
			if err := v.st.CreateTable(ctx, spec); err != nil {
				log.Fatalf("cqldisk: create %s %s: %v", v.name, spec.Name, err)
			}
			// Flushes on a timer, so that a small table reaches the disk.
			q := fmt.Sprintf(`ALTER TABLE "%s"."%s" WITH memtable_flush_period_in_ms = %d`, v.ks, spec.Name, flush.Milliseconds())
			if err := sess.Query(q).Exec(); err != nil {
				log.Fatalf("cqldisk: %s: %v", q, err)
			}
		}
	}

	start := time.Now()
	type key struct {
		v string
		r cql.Role
	}
	written := map[key]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, v := range variants {
		for _, r := range cql.Roles() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := load(ctx, v, r, specs[r], start)
				mu.Lock()
				written[key{v.name, r}] = n
				mu.Unlock()
			}()
		}
	}

	// Samples: bytes per variant and role, live data and snapshots apart.
	type sample struct {
		at             time.Duration
		live, snapshot map[key]int64
	}
	var samples []sample
	for t := time.Duration(0); t <= *observe; t += *every {
		time.Sleep(time.Until(start.Add(t)))
		s := sample{at: t, live: map[key]int64{}, snapshot: map[key]int64{}}
		for _, v := range variants {
			for _, r := range cql.Roles() {
				k := key{v.name, r}
				s.live[k], s.snapshot[k] = tableBytes(dataDir, v.ks, specs[r].Name)
			}
		}
		samples = append(samples, s)
		log.Printf("t=%s %v", t, s.live)
	}
	wg.Wait()

	fmt.Printf("TTL %s, written for %s at %d rows/s per table, %d-byte values, memtables flushed every %s.\n\n",
		*ttl, *write, *rate, *valueN, *flush)
	fmt.Printf("| role | options | rows written | rows readable at end |")
	for _, s := range samples {
		fmt.Printf(" %s |", s.at.Round(time.Second))
	}
	fmt.Printf("\n|---|---|---|---|")
	for range samples {
		fmt.Printf("---|")
	}
	fmt.Println()
	for _, r := range cql.Roles() {
		for _, v := range variants {
			k := key{v.name, r}
			live := readable(ctx, v, specs[r])
			fmt.Printf("| %s | %s | %d | %s |", r, v.name, written[k], live)
			for _, s := range samples {
				cell := kb(s.live[k])
				if s.snapshot[k] > 0 {
					cell += " + " + kb(s.snapshot[k]) + " snapshot"
				}
				fmt.Printf(" %s |", cell)
			}
			fmt.Println()
		}
	}
}

// roleSpecs returns a table of each role, as ebb's packages declare them.
func roleSpecs() map[cql.Role]store.TableSpec {
	shard := store.TableSpec{
		Name:         "ix_disk_1",
		PartitionKey: []store.Column{{Name: "index_id", Type: store.TypeText}, {Name: "bucket", Type: store.TypeInt64}},
		Clustering:   []store.Column{{Name: "ts", Type: store.TypeTimestamp}, {Name: "event_id", Type: store.TypeText}},
		Values:       []store.Column{{Name: "payload", Type: store.TypeBytes}},
		NeverExpires: true,
	}
	return map[cql.Role]store.TableSpec{
		cql.RoleShard:  shard,
		cql.RoleList:   lists.TableSpec("list_disk", *ttl),
		cql.RoleShared: multitable.ItemsSpec,
		cql.RoleExpiry: expiry.IndexSpec,
	}
}

// load writes the role's table for -write, one batch of a tenth of -rate
// every 100 ms, each batch to one partition, and returns the rows written.
// The expiry index's entries are deleted when due, -ttl after they were
// written, as the sweeper does; the shard is dropped at the end.
func load(ctx context.Context, v *variant, r cql.Role, spec store.TableSpec, start time.Time) int {
	per := max(1, *rate/10)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	n := 0
	type wave struct {
		due   time.Time
		batch []store.Mutation
	}
	var due []wave
	end := start.Add(*write)
	if r == cql.RoleExpiry {
		end = end.Add(*ttl)
	}
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		now := time.Now()
		for r == cql.RoleExpiry && len(due) > 0 && !due[0].due.After(now) {
			del := make([]store.Mutation, len(due[0].batch))
			for k, m := range due[0].batch {
				del[k] = store.Mutation{Kind: store.DeleteRow, Partition: m.Partition, Clustering: m.Clustering}
			}
			if err := v.st.Write(ctx, spec.Name, del); err != nil {
				log.Printf("cqldisk: delete %s %s: %v", v.name, spec.Name, err)
			}
			due = due[1:]
		}
		if now.Sub(start) >= *write {
			continue
		}
		batch := make([]store.Mutation, 0, per)
		var part []any
		for j := 0; j < per; j++ {
			val := make([]byte, *valueN)
			_, _ = rand.Read(val)
			m := store.Mutation{Kind: store.Upsert}
			switch r {
			case cql.RoleShard:
				part = []any{"idx", int64(i / 100)}
				m.Clustering = []any{now.Add(time.Duration(j)), fmt.Sprintf("e%d-%d", i, j)}
				m.Cells = []store.Cell{{Column: "payload", Value: val}}
			case cql.RoleList:
				part = []any{fmt.Sprintf("entity-%d", i%50)}
				m.Clustering = []any{fmt.Sprintf("%020d-%04d", now.UnixNano(), j)}
				m.Cells = []store.Cell{{Column: "value", Value: val}}
				m.ExpiresAt, m.Expiry = now.Add(*ttl), store.ExpiryNative
			case cql.RoleShared:
				part = []any{"t", int64(1), int64(0), int64(i % 50)}
				m.Clustering = []any{time.UnixMilli(0).UTC(), fmt.Sprintf("k%d-%d", i, j), int64(0)}
				m.Cells = []store.Cell{{Column: "at", Value: now.UTC().Truncate(time.Millisecond)}, {Column: "attrs", Value: val}, {Column: "size", Value: int64(len(val))}}
				m.ExpiresAt, m.Expiry = now.Add(*ttl), store.ExpiryNative
			case cql.RoleExpiry:
				part = []any{now.Truncate(time.Minute).UnixMilli(), int64(i % 4)}
				m.Clustering = []any{now.Add(*ttl).UTC().Truncate(time.Millisecond), "t", []byte(fmt.Sprintf("%d-%d", i, j))}
				m.Cells = []store.Cell{{Column: "pk", Value: val[:*valueN/2]}, {Column: "ck", Value: val[*valueN/2:]}, {Column: "expires_at", Value: now.Add(*ttl).UTC().Truncate(time.Millisecond)}}
			}
			m.Partition = part
			batch = append(batch, m)
		}
		if err := v.st.Write(ctx, spec.Name, batch); err != nil {
			log.Printf("cqldisk: write %s %s: %v", v.name, spec.Name, err)
			continue
		}
		n += len(batch)
		if r == cql.RoleExpiry {
			due = append(due, wave{now.Add(*ttl), batch})
		}
	}
	if r == cql.RoleShard {
		if err := v.st.DropTable(ctx, spec.Name); err != nil {
			log.Printf("cqldisk: drop %s %s: %v", v.name, spec.Name, err)
		}
	}
	return n
}

// readable counts the rows a full scan of the table returns, or says it
// was dropped.
func readable(ctx context.Context, v *variant, spec store.TableSpec) string {
	if spec.NeverExpires {
		return "table dropped"
	}
	n := 0
	for _, p := range partitionsOf(spec) {
		q := store.Query{Partition: p, Limit: 1000}
		for {
			next, err := v.st.Scan(ctx, spec.Name, q, func(*store.RawRow) error { n++; return nil })
			if err != nil {
				return "error: " + err.Error()
			}
			if len(next) == 0 {
				break
			}
			q.PageToken = next
		}
	}
	return fmt.Sprint(n)
}

// partitionsOf lists the partitions load writes to in a table of spec's
// role (the expiry index's by minute, for the span of the run).
func partitionsOf(spec store.TableSpec) [][]any {
	var out [][]any
	switch {
	case spec.Name == expiry.IndexTable:
		from := time.Now().Add(-*observe - time.Minute).Truncate(time.Minute)
		for t := from; !t.After(time.Now()); t = t.Add(time.Minute) {
			for s := int64(0); s < 4; s++ {
				out = append(out, []any{t.UnixMilli(), s})
			}
		}
	case spec.DefaultTTL > 0:
		for i := 0; i < 50; i++ {
			out = append(out, []any{fmt.Sprintf("entity-%d", i)})
		}
	default:
		for i := int64(0); i < 50; i++ {
			out = append(out, []any{"t", int64(1), int64(0), i})
		}
	}
	return out
}

// dataDirectory reads the node's first data directory.
func dataDirectory(sess *gocql.Session) string {
	var v string
	if err := sess.Query(`SELECT value FROM system_views.settings WHERE name = 'data_file_directories'`).Scan(&v); err != nil {
		log.Fatalf("cqldisk: data directory: %v", err)
	}
	v = strings.Trim(v, "[] ")
	dir, _, _ := strings.Cut(v, ",")
	if _, err := os.Stat(dir); err != nil {
		log.Fatalf("cqldisk: the node's data directory %q is not on this machine: %v", dir, err)
	}
	return dir
}

// tableBytes returns the space the table's files take in its directories
// (every table id it had), its snapshots apart.
func tableBytes(dataDir, ks, table string) (live, snapshot int64) {
	dirs, _ := filepath.Glob(filepath.Join(dataDir, ks, table+"-*"))
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			info, err := e.Info()
			if err != nil {
				return nil
			}
			n := info.Size()
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n = st.Blocks * 512
			}
			if strings.Contains(p, string(filepath.Separator)+"snapshots"+string(filepath.Separator)) {
				snapshot += n
			} else {
				live += n
			}
			return nil
		})
	}
	return live, snapshot
}

func kb(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}
