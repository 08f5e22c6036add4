// Package lease elects one process per background role (the shard manager,
// the expiry sweeper) among the processes that share a backend.
//
// A lease is one document in the ebb_meta table: holder, epoch and expiry.
// It is taken and renewed by compare-and-swap (store.Meta.CompareAndSwap,
// a conditional write on every backend), so two processes never both
// believe they took the same epoch. The epoch grows by one at every change
// of holder and is the fencing token: before a destructive action the
// holder renews the lease by compare-and-swap against the document it last
// wrote (Fence), and the store refuses that write once anyone else has
// taken the lease. A paused holder that wakes up therefore fails its fence
// and acts on nothing.
//
// One process writes its lease from more than one goroutine: the role's
// renewer and the fences of a running pass. Those writes are serialized,
// so that one never finds the document changed by the other and takes its
// own renewal for a takeover; a write whose outcome is unknown (a timeout)
// is recognised afterwards by holder and epoch, which only this process
// writes together.
//
// Timing: a holder renews every Duration/2 (ebb's roles; a renewal of a
// held lease is one conditional write, with no read) and trusts its lease only until
// Duration minus Margin after it last started a successful renewal, by its
// own clock; another process takes over once Duration has passed since the
// expiry recorded in the document, by its clock. Clocks of the processes
// may disagree by at most Margin for the two intervals never to overlap;
// the fence protects destructive actions even when they do.
//
// On a backend that one process holds exclusively (the embedded one, by
// its directory lock) a new process takes the lease at once, whatever the
// document says: the previous holder is known to be gone.
package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ebb-data/ebb/store"
)

// metaKind is the ebb_meta partition holding one document per role.
const metaKind = "lease"

// ErrNotHeld is returned by Fence when this process does not hold the
// lease, or has lost it to a newer epoch.
var ErrNotHeld = errors.New("lease: not held by this process")

// Record is a lease document as stored.
type Record struct {
	Holder  string    `json:"holder"`
	Epoch   int64     `json:"epoch"`
	Expires time.Time `json:"expires"`
}

// Options configure a Lease.
type Options struct {
	// Store holds the ebb_meta table. Required.
	Store store.Store
	// Role names what the lease is for ("shard-manager", "sweeper").
	Role string
	// Holder identifies this process; unique among the processes sharing
	// the Store.
	Holder string
	// Duration is how long a lease lasts without renewal. Default 15 s.
	Duration time.Duration
	// Margin is how much earlier than Duration the holder stops trusting
	// its lease: the clock skew and pause detection it tolerates. Default
	// Duration/5.
	Margin time.Duration
	// Exclusive: the Store is held by this process alone, so a lease held
	// by any other holder is stale and taken at once.
	Exclusive bool
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// DefaultDuration is the default lease duration: a crashed holder is
// replaced within two of them.
const DefaultDuration = 15 * time.Second

func (o *Options) withDefaults() error {
	if o.Store == nil || o.Role == "" || o.Holder == "" {
		return store.Errorf(store.ErrInvalid, "lease: Store, Role and Holder are required")
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Margin == 0 {
		o.Margin = o.Duration / 5
	}
	if o.Duration < 0 || o.Margin < 0 || o.Margin >= o.Duration {
		return store.Errorf(store.ErrInvalid, "lease: Duration must be positive and Margin within it")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Status is what a process knows of one lease.
type Status struct {
	Role string
	// Held: this process holds the lease now.
	Held bool
	// Record is the last document read or written; zero when none exists.
	Record Record
}

// Lease is one role's lease as seen by one process. It is safe for
// concurrent use.
type Lease struct {
	o    Options
	meta store.Meta

	// writeMu serializes this process's reads and compare-and-swaps of
	// the document (Acquire, Fence, Release), so that a renewal and a
	// fence never race each other into a conflict.
	writeMu sync.Mutex
	// ensured: MetaTable was created (or found) once; a renewal then
	// costs no create_table call. Guarded by writeMu.
	ensured bool

	mu      sync.Mutex
	doc     []byte    // the document this process last wrote, when held
	rec     Record    // doc, decoded
	until   time.Time // trust the lease until then, by our clock
	current Record    // the last document seen
}

// New returns a Lease that is not held; Acquire takes it.
func New(o Options) (*Lease, error) {
	if err := o.withDefaults(); err != nil {
		return nil, err
	}
	return &Lease{o: o, meta: store.Meta{S: o.Store}}, nil
}

// Duration is the lease's duration.
func (l *Lease) Duration() time.Duration { return l.o.Duration }

// Held reports whether this process holds the lease and may act on it now.
func (l *Lease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heldLocked(l.o.Now())
}

func (l *Lease) heldLocked(now time.Time) bool { return l.doc != nil && now.Before(l.until) }

// Status reports the lease as last seen.
func (l *Lease) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Status{Role: l.o.Role, Held: l.heldLocked(l.o.Now()), Record: l.current}
}

// Acquire makes one attempt to take or renew the lease and reports
// whether this process holds it afterwards. It renews a lease this
// process holds, takes a free or expired one with the next epoch, and
// otherwise leaves the lease to its holder.
func (l *Lease) Acquire(ctx context.Context) (bool, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	held, err := l.acquireLocked(ctx)
	if errors.Is(err, store.ErrTableNotFound) {
		l.ensured = false // dropped under us: create it again next time
	}
	return held, err
}

// acquireLocked is Acquire under writeMu.
func (l *Lease) acquireLocked(ctx context.Context) (bool, error) {
	if !l.ensured {
		if err := (store.Meta{S: l.o.Store}).Ensure(ctx); err != nil {
			// The outcome says nothing of the lease: keep trusting it
			// until it would have lapsed anyway.
			return l.Held(), fmt.Errorf("lease %s: %w", l.o.Role, err)
		}
		l.ensured = true
	}
	start := l.o.Now()
	// A renewal of a lease this process holds writes against the document
	// it last wrote, without reading it first: an idle holder then costs
	// one conditional write per renewal. Only a conflict (a takeover, or
	// an earlier write of this process whose outcome it did not learn)
	// needs the read below.
	l.mu.Lock()
	held, last, rec := l.heldLocked(start), l.doc, l.rec
	l.mu.Unlock()
	if held {
		next := rec
		next.Expires = start.Add(l.o.Duration)
		if ok, err := l.swap(ctx, last, next, start); ok || err != nil {
			return ok, err
		}
		// swap forgot the document on the conflict; until the read tells,
		// it is still this process's last word (ownsLocked needs it).
		l.mu.Lock()
		l.doc = last
		l.mu.Unlock()
	}
	old, cur, err := l.read(ctx)
	if err != nil {
		return l.Held(), err
	}
	l.mu.Lock()
	mine := l.ownsLocked(old, cur)
	l.current = cur
	l.mu.Unlock()

	next := Record{Holder: l.o.Holder, Epoch: cur.Epoch, Expires: start.Add(l.o.Duration)}
	switch {
	case mine:
		// Renewal: same epoch.
	case old == nil, !start.Before(cur.Expires), l.o.Exclusive:
		next.Epoch = cur.Epoch + 1
	default:
		l.lose()
		return false, nil
	}
	return l.swap(ctx, old, next, start)
}

// read returns the stored document and its record; both are zero when
// there is none.
func (l *Lease) read(ctx context.Context) ([]byte, Record, error) {
	var cur Record
	old, err := l.meta.Get(ctx, metaKind, l.o.Role)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, cur, fmt.Errorf("lease %s: read: %w", l.o.Role, err)
	}
	if old != nil {
		if err := json.Unmarshal(old, &cur); err != nil {
			return nil, cur, fmt.Errorf("lease %s: corrupt document: %w", l.o.Role, err)
		}
	}
	return old, cur, nil
}

// ownsLocked reports whether the stored document (old, decoding to cur)
// is this process's hold on the lease: the document it last wrote, or one
// with its holder and epoch, which only this process writes and which a
// write whose outcome it did not learn (a timeout) left behind. Every
// change of holder moves the epoch on, so nobody took the lease between.
func (l *Lease) ownsLocked(old []byte, cur Record) bool {
	if l.doc == nil || old == nil {
		return false
	}
	return string(l.doc) == string(old) || (cur.Holder == l.o.Holder && cur.Epoch == l.rec.Epoch)
}

// swap writes next in place of old and records the outcome.
func (l *Lease) swap(ctx context.Context, old []byte, next Record, start time.Time) (bool, error) {
	doc, err := json.Marshal(next)
	if err != nil {
		return false, err
	}
	err = l.meta.CompareAndSwap(ctx, metaKind, l.o.Role, old, doc)
	if errors.Is(err, store.ErrConflict) {
		// Someone else wrote first: they hold it.
		l.lose()
		return false, nil
	}
	if err != nil {
		// Unknown outcome: keep trusting the lease only until it would
		// have lapsed anyway.
		return l.Held(), fmt.Errorf("lease %s: write: %w", l.o.Role, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.doc, l.rec, l.current = doc, next, next
	l.until = start.Add(l.o.Duration - l.o.Margin)
	return true, nil
}

func (l *Lease) lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.doc = nil
}

// Fence checks, in the store, that this process still holds the lease,
// renewing it on the way: a compare-and-swap against the document this
// process last wrote. It returns nil when the action may go ahead and an
// error wrapping ErrNotHeld when the lease lapsed locally or another
// process has taken it (a newer epoch). Call it right before every
// destructive action.
func (l *Lease) Fence(ctx context.Context) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	start := l.o.Now()
	l.mu.Lock()
	if !l.heldLocked(start) {
		l.mu.Unlock()
		return fmt.Errorf("%w: %s lease lapsed or never taken", ErrNotHeld, l.o.Role)
	}
	old, rec := l.doc, l.rec
	l.mu.Unlock()
	next := rec
	next.Expires = start.Add(l.o.Duration)
	ok, err := l.swap(ctx, old, next, start)
	if err == nil && !ok {
		// The document changed since this process last wrote it. Either
		// another process took the lease, or an earlier write of this one
		// landed although its outcome was not learned: read it and tell.
		// swap forgot the document on the conflict; until the read tells,
		// it is still this process's last word (ownsLocked needs it).
		l.mu.Lock()
		l.doc = old
		l.mu.Unlock()
		var stored []byte
		var cur Record
		if stored, cur, err = l.read(ctx); err == nil {
			l.mu.Lock()
			mine := l.ownsLocked(stored, cur)
			l.current = cur
			if !mine {
				l.doc = nil
			}
			l.mu.Unlock()
			if mine {
				ok, err = l.swap(ctx, stored, next, start)
			}
		}
	}
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s lease taken over (epoch %d is no longer current)", ErrNotHeld, l.o.Role, rec.Epoch)
	}
	return nil
}

// Release gives the lease up so that another process takes over at once,
// without waiting for it to lapse. It is a no-op when not held.
func (l *Lease) Release(ctx context.Context) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	old, cur := l.doc, l.rec
	l.doc = nil
	l.mu.Unlock()
	if old == nil {
		return nil
	}
	// Expired now, same epoch: the next taker moves to epoch+1.
	cur.Expires = l.o.Now()
	doc, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	err = l.meta.CompareAndSwap(ctx, metaKind, l.o.Role, old, doc)
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}
