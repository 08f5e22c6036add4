package cql

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/remote"
)

// Options configures a Store. The zero value of each field is documented;
// DefaultOptions returns the values ebb serve starts from.
type Options struct {
	// Hosts are the contact points, "host" or "host:port" (port 9042 when
	// omitted). At least one is required.
	Hosts []string
	// Keyspace holds every table of the Store, its catalog and its index
	// tables. Required; it must match KeyspacePattern.
	Keyspace string
	// CreateKeyspace creates the keyspace at Open when it is missing, with
	// Replication. Production keyspaces are usually created by an operator.
	CreateKeyspace bool
	// Replication is the CQL replication map used by CreateKeyspace, for
	// example {'class': 'NetworkTopologyStrategy', 'dc1': 3}. Empty means
	// {'class': 'SingleRegionStrategy'} on Amazon Keyspaces and
	// {'class': 'SimpleStrategy', 'replication_factor': 1} elsewhere, which
	// only suits a single-node test cluster.
	Replication string
	// Consistency is the consistency level of reads and writes. Zero means
	// LOCAL_QUORUM. Conditional writes use LOCAL_SERIAL for their Paxos
	// phase whatever this is.
	Consistency gocql.Consistency
	// Username and Password, when Username is set, authenticate with the
	// server's password authenticator (Keyspaces service-specific
	// credentials work the same way).
	Username, Password string
	// SigV4, when set, authenticates with Amazon Keyspaces' SigV4 exchange
	// instead (see SigV4); it excludes Username.
	SigV4 *SigV4
	// TLS turns TLS on; CAFile (PEM) adds root certificates and ServerName
	// sets the name checked in the server's certificate (the host name of
	// the first contact point when empty). Keyspaces requires TLS.
	TLS        bool
	CAFile     string
	ServerName string
	// MaxTables is the most CQL tables the keyspace may hold (the catalog,
	// each table and each table's index companion count one); CreateTable
	// refuses with ErrTableQuota what would exceed it. Zero means the
	// provider's default: DefaultKeyspacesMaxTables on Amazon Keyspaces
	// (its quota counts every keyspace of the account in the Region, so
	// set what is left for ebb), none on Cassandra and ScyllaDB. Negative
	// means none.
	MaxTables int
	// TableOptions overrides, per table role (see Role and RoleOf), the
	// options ebb adds to CREATE TABLE on Cassandra and ScyllaDB
	// (compaction, gc_grace_seconds, tombstone_gc): what follows WITH,
	// joined by AND, without the clustering order or
	// default_time_to_live, which ebb still sets. An empty string means no
	// options at all (the cluster's defaults). A table keeps the options
	// it was created with; ALTER TABLE changes them. Ignored on Amazon
	// Keyspaces, which ignores these settings.
	TableOptions map[Role]string
	// Common holds the options every remote backend has (see
	// remote.Common). Here Timeout (10 s by default) bounds each data
	// operation; TableTimeout (5 minutes) schema agreement and Keyspaces'
	// asynchronous creates and drops; MaxAttempts (6) the attempts of a
	// request the cluster refused as overloaded or that timed out;
	// MaxBackoff (1 s) the backoff between them. TTLMargin
	// (DefaultTTLMargin) is added to every native TTL (USING TTL) this
	// Store writes; Now is also the clock native TTLs are computed on,
	// since CQL TTLs are relative.
	remote.Common
	// Registerer, when set, receives the Store's request metrics.
	Registerer prometheus.Registerer
}

// DefaultTTLMargin is the default Options.TTLMargin. A minute is far more
// than the skew of hosts kept by NTP (milliseconds), and costs little: the
// expiry sweeper deletes expired rows within seconds, so the backstop only
// holds on to what the sweeper missed, a minute longer.
const DefaultTTLMargin = time.Minute

// DefaultOptions returns the options ebb serve starts from; Hosts and
// Keyspace are still to be set.
func DefaultOptions() Options {
	c := remote.DefaultCommon()
	c.MaxAttempts, c.MaxBackoff, c.TTLMargin = 6, time.Second, DefaultTTLMargin
	return Options{Common: c, Consistency: gocql.LocalQuorum}
}

// KeyspacePattern is what Options.Keyspace must match: CQL's rule for
// keyspace names (Keyspaces adds a minimum length of 3 on its own).
var KeyspacePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,47}$`)

// Validate checks the options; errors wrap store.ErrInvalid.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return store.Errorf(store.ErrInvalid, "cql: %s", fmt.Sprintf(format, args...))
	}
	if len(o.Hosts) == 0 {
		return bad("no hosts")
	}
	for _, h := range o.Hosts {
		if _, _, err := splitHost(h); err != nil {
			return bad("host %q: %v", h, err)
		}
	}
	if !KeyspacePattern.MatchString(o.Keyspace) {
		return bad("keyspace %q must match %s", o.Keyspace, KeyspacePattern)
	}
	switch o.Consistency {
	case 0, gocql.One, gocql.Two, gocql.Three, gocql.Quorum, gocql.All, gocql.LocalQuorum, gocql.EachQuorum, gocql.LocalOne:
	default:
		return bad("consistency %v is not a read/write consistency level", o.Consistency)
	}
	if err := o.Common.Validate("cql"); err != nil {
		return err
	}
	if o.Password != "" && o.Username == "" {
		return bad("a password without a username")
	}
	if o.SigV4 != nil && (o.Username != "" || o.SigV4.Region == "" || o.SigV4.Credentials == nil) {
		return bad("SigV4 needs a region and credentials, and no username")
	}
	if err := validateTableOptions(o.TableOptions); err != nil {
		return err
	}
	if (o.CAFile != "" || o.ServerName != "") && !o.TLS {
		return bad("CAFile or ServerName set without TLS")
	}
	return nil
}

// withDefaults fills zero values.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	o.Common = o.Common.WithDefaults(d.Common)
	if o.Consistency == 0 {
		o.Consistency = d.Consistency
	}
	return o
}

// splitHost parses "host" or "host:port".
func splitHost(h string) (string, int, error) {
	if h == "" {
		return "", 0, fmt.Errorf("empty")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: the whole string is the host (an IPv6 address needs
		// brackets when a port follows).
		return h, 9042, nil
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port %q", port)
	}
	if host == "" {
		return "", 0, fmt.Errorf("empty host")
	}
	return host, p, nil
}
