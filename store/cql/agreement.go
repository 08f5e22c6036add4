package cql

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ebb-data/ebb/internal/backoff"
	"github.com/ebb-data/ebb/store"
)

// agreementPoll is the longest interval between two looks at the nodes'
// schema versions while they disagree. The first looks come sooner
// (agreementFirstPoll, doubling): on a healthy cluster the other nodes
// take the change within tens of milliseconds of the coordinator's
// answer, and a table change waited a whole 200 ms poll for it, a fifth
// of a CREATE TABLE on three nodes.
const (
	agreementPoll      = 200 * time.Millisecond
	agreementFirstPoll = 20 * time.Millisecond
)

// awaitSchema waits until every node the driver sees UP holds the change
// the coordinator just ran, each node asked for its own schema version
// (system.local) directly: a node takes a change pushed to it within
// milliseconds, while what a node says of its peers' versions
// (system.peers) comes by gossip, a second or more behind. Waiting for
// the peers' gossiped versions cost every CREATE and DROP TABLE on three
// nodes a second or more.
//
// A node holds the change once its version is one the coordinator has
// reported since it ran the change: a node's version is the hash of its
// whole schema, set after the node has applied a change (its tables in
// memory included), and every schema the coordinator has had since the
// change contains the change. The nodes need not hold the same version:
// while other clients keep changing the schema (replicas creating
// features, a shard manager's pass, tests side by side) the coordinator
// moves on and the others follow a change or two behind, so that all
// versions were seldom equal at the instant of a look, and a wait for
// equality lasted minutes or until its timeout. Every look reads the
// coordinator's version too, so the versions it moves through are seen.
//
// The driver's own AwaitSchemaAgreement counts every row of system.peers,
// a dead node's too: with one replica of three down (which LOCAL_QUORUM
// is chosen to survive) every CREATE and DROP TABLE would wait the whole
// TableTimeout and fail. The DataStax drivers, too, leave out nodes that
// are down. A node that is down gets the schema from the others when it
// comes back (Cassandra and ScyllaDB pull a newer schema over gossip
// before the node serves). A node the driver lists as up but holds no
// connection to counts as down too: it cannot be asked, and no request
// of this Store reaches it. The wait ends with store.ErrUnavailable,
// naming the versions seen, at TableTimeout or when ctx ends; the change
// stays applied where it reached, and the caller's next attempt repeats
// it harmlessly (IF [NOT] EXISTS).
func (s *Store) awaitSchema(ctx context.Context, coordinator string) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.TableTimeout)
	defer cancel()
	poll := agreementFirstPoll
	since := map[string]bool{} // the coordinator's versions since the change
	for {
		versions, err := s.liveSchemaVersions(ctx, coordinator, since)
		if err == nil && holdChange(versions, since) {
			return nil
		}
		serr := backoff.Sleep(ctx, poll)
		poll = min(2*poll, agreementPoll)
		if serr != nil {
			if err != nil {
				return mapErr(ctx, "cql: schema agreement", err)
			}
			return store.Errorf(store.ErrUnavailable, "cql: the live nodes still disagree on the schema after %s (versions %s): "+
				"the change is applied where it reached and is retried", s.opts.TableTimeout, strings.Join(versions, ", "))
		}
	}
}

// holdChange reports whether every version in versions is one the
// coordinator has had since the change (since). Without a chosen
// coordinator (since stays empty, see liveSchemaVersions) the versions
// must all be one.
func holdChange(versions []string, since map[string]bool) bool {
	if len(since) == 0 {
		return len(versions) == 1
	}
	for _, v := range versions {
		if !since[v] {
			return false
		}
	}
	return true
}

// liveCoordinator returns the host id of a node the driver sees UP, to
// run a schema change and then wait for agreement on: the first contact
// point (Options.Hosts) that is up, else any node that is.
func (s *Store) liveCoordinator() (string, error) {
	var fallback string
	hosts := s.session.GetHosts()
	for _, want := range s.opts.Hosts {
		addr, _, _ := splitHost(want)
		for _, h := range hosts {
			if h.IsUp() && h.ConnectAddress().String() == addr {
				return h.HostID(), nil
			}
		}
	}
	for _, h := range hosts {
		if h.IsUp() {
			fallback = h.HostID()
			break
		}
	}
	if fallback == "" {
		return "", store.Errorf(store.ErrUnavailable, "cql: no node is up")
	}
	return fallback, nil
}

// hostUp reports whether the driver sees the node with host id up.
func (s *Store) hostUp(id string) bool {
	for _, h := range s.session.GetHosts() {
		if h.HostID() == id {
			return h.IsUp()
		}
	}
	return false
}

// liveSchemaVersions returns the distinct schema versions, sorted, of the
// nodes the driver sees UP, each read from the node itself, and adds the
// coordinator's, read first, to since. An empty coordinator means the
// driver cannot route a query to a node of its choice (see ddl):
// whichever node it picks then answers for its own version and, from
// system.peers, for its peers', and since is left as it is.
func (s *Store) liveSchemaVersions(ctx context.Context, coordinator string, since map[string]bool) ([]string, error) {
	if coordinator == "" {
		return s.gossipedSchemaVersions(ctx)
	}
	var cv gocql.UUID
	if err := s.session.Query(`SELECT schema_version FROM system.local WHERE key = 'local'`).
		SetHostID(coordinator).Consistency(gocql.One).ScanContext(ctx, &cv); err != nil {
		return nil, err
	}
	since[cv.String()] = true
	var versions []string
	for _, h := range s.session.GetHosts() {
		if !h.IsUp() {
			continue
		}
		var v gocql.UUID
		err := s.session.Query(`SELECT schema_version FROM system.local WHERE key = 'local'`).
			SetHostID(h.HostID()).Consistency(gocql.One).ScanContext(ctx, &v)
		if errors.Is(err, gocql.ErrNoConnections) && h.HostID() != coordinator {
			// The driver lists the node as up but holds no connection to
			// it, so it can neither be asked nor be sent a request: a
			// node it has just lost (it is marked down once its pool
			// fails to refill), or one it knows only by its own answer
			// and not by address (behind a proxy with
			// DisableInitialHostLookup, the node's host id beside the
			// contact point's). It counts as a node that is down.
			continue
		}
		if err != nil {
			return nil, err
		}
		versions = append(versions, v.String())
	}
	slices.Sort(versions)
	return slices.Compact(versions), nil
}

// gossipedSchemaVersions returns the distinct schema versions, sorted, of
// the node the driver picks and of the peers it lists that the driver sees
// UP.
func (s *Store) gossipedSchemaVersions(ctx context.Context) ([]string, error) {
	up := map[string]bool{}
	for _, h := range s.session.GetHosts() {
		if h.IsUp() {
			up[h.HostID()] = true
		}
	}
	var local gocql.UUID
	if err := s.session.Query(`SELECT schema_version FROM system.local WHERE key = 'local'`).
		Consistency(gocql.One).ScanContext(ctx, &local); err != nil {
		return nil, err
	}
	versions := []string{local.String()}
	iter := s.session.Query(`SELECT host_id, schema_version FROM system.peers`).
		Consistency(gocql.One).IterContext(ctx)
	var id, v gocql.UUID
	for iter.Scan(&id, &v) {
		if up[id.String()] {
			versions = append(versions, v.String())
		}
	}
	if err := iter.Close(); err != nil {
		return nil, err
	}
	slices.Sort(versions)
	return slices.Compact(versions), nil
}
