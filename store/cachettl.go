package store

import "time"

// DefaultCacheTTL is the default CacheTTL of every cache of configuration
// read from a store (the root package's Options, timeseries, lists,
// multitable, migrate and expiry): how long a process may go on acting on
// a configuration it read (an index's config and shard list, a list
// feature, a shared table, a migration's phase, a table's spec) after
// another process sharing the backend changed it. This process's own
// changes are seen at once; only replicas lag, by at most this much.
//
// Two seconds is a bound an operator can wait out by hand (a deleted
// shared table refuses writes everywhere, a migration phase takes effect
// everywhere, a moment after the command that changed it returns), while
// re-reading a hot table's configuration every two seconds costs one meta
// read per table per replica per two seconds, little beside the data
// path's own reads.
const DefaultCacheTTL = 2 * time.Second
