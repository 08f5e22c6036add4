package store

import "context"

// Generations is implemented by a store every write of which passes through
// this process (the embedded backend): it tells a reader whether a
// partition may have changed since it was read, so that an answer computed
// from the partition can be kept and given again until then (see
// lists.Stamp). A remote backend, which other processes write, does not
// implement it.
type Generations interface {
	// Generation returns the partition's write generation. A write to
	// the partition changes it before the write can be seen by a read,
	// and it stays changed: if two calls return equal values, no write to
	// the partition began between them. A value with Settled false was
	// taken while a write to the partition (or to one sharing its
	// counter) was under way, and answers no such question.
	Generation(table string, partition []any) (Generation, error)
}

// Generation is a partition's write generation (see Generations), compared
// with ==. Table identifies the table, so that a table dropped and created
// again under its name has other generations; Started and Finished count
// the writes begun and ended on the partition's counter, which other
// partitions may share.
type Generation struct {
	Table, Started, Finished uint64
}

// Settled reports whether no write was under way when g was taken.
func (g Generation) Settled() bool { return g.Started == g.Finished }

// ScanCharger is implemented by a decorator that accounts reads (the
// metering one): ChargeScan accounts a read answered from a kept answer
// rather than from the store as the Scan it stands for was accounted,
// tally being what that Scan handed out (Query.Tally).
type ScanCharger interface {
	ChargeScan(ctx context.Context, table string, partition []any, tally ScanTally)
}
