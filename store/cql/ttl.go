package cql

import "time"

// Native TTL is a backstop only: ebb resolves expiry on read from the
// millisecond expiry columns against Options.Now, and the expiry sweeper
// deletes expired rows. The backstop must never remove a part ebb still
// considers live, so:
//
//   - a TTL counts from the Store's clock, not the cluster's, because CQL
//     TTLs are relative: TTL = ceil((expiry - now) / 1 s) + margin, where
//     margin (Options.TTLMargin) absorbs the skew between ebb's clock and
//     the cluster's, which removes the cell on its own clock;
//   - it is rounded up to whole seconds, never down;
//   - a part that never expires, or whose TTL would exceed what the
//     cluster accepts (ttlCap), is written with TTL 0: no backstop, which
//     is safe (the sweeper still deletes it) where a shorter TTL is not.

const (
	// maxTTLSeconds is CQL's largest TTL: 20 years.
	maxTTLSeconds = 630_720_000
	// expiryLimit is the latest expiration time a cluster with 32-bit
	// expiration times accepts (Cassandra before 5.0, and 5.0 in its
	// default CASSANDRA_4 storage compatibility mode; ScyllaDB): a write
	// whose TTL reaches past it is refused.
	expiryLimit = 2147483647 - 1 // 2038-01-19T03:14:06Z, in Unix seconds
	// capHeadroom is how long before expiryLimit the cap stops, so a Store
	// that stays open that long still never writes a TTL the cluster
	// refuses.
	capHeadroom = 30 * 24 * time.Hour
)

// ttlCap is the largest TTL a Store opened at wall-clock time wall writes:
// CQL's maximum, or less so that wall + TTL stays before expiryLimit (less
// capHeadroom). It is at least 0.
func ttlCap(wall time.Time) int64 {
	c := expiryLimit - wall.Unix() - int64(capHeadroom/time.Second)
	return max(0, min(c, maxTTLSeconds))
}

// ttlSeconds is the USING TTL of a part expiring at exp, written at now
// (both Unix ms; exp == never for a part that never expires), with margin
// ms of slack; 0 means no TTL. A part that has already expired still gets
// at least 1 s, so it does not stay on disk forever.
func ttlSeconds(exp, now, margin, capSeconds int64) int64 {
	if exp == never || exp == 0 {
		return 0
	}
	d := exp - now
	secs := ceilDiv(d, 1000) + ceilDiv(margin, 1000)
	if secs > capSeconds {
		return 0
	}
	return max(secs, 1)
}

// ceilDiv divides rounding towards positive infinity.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}
