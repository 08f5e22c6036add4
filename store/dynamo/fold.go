package dynamo

import (
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// A batch is folded, per row, into at most one DynamoDB operation per phase.
// This keeps "a later mutation of the same row wins" without ordering
// requests (BatchWriteItem and TransactWriteItems refuse two operations on
// one item, and do not order their requests), and sends fewer requests.
//
// Folding rules for mutation m applied to the row's pending operation:
//
//	full Upsert           -> put (replaces whatever came before)
//	DeleteRow             -> delete
//	partial Upsert        put: merged into the item; delete: put of just
//	                      these cells; update: merged; none: update
//	DeleteCells           put: removed from the item; delete: stays delete;
//	                      update: merged; none: update
//	DeleteIfExpired       put: evaluated now on the known item; delete:
//	                      stays delete; none: conditional delete
//
// A partial write or DeleteCells after a DeleteIfExpired, or a
// DeleteIfExpired after an update, depends on the stored row and cannot be
// folded: the row's later mutations go to the next phase. Phases run one
// after the other; operations within a phase touch distinct rows and run
// concurrently.

type opKind uint8

const (
	opPut opKind = iota
	opDelete
	opUpdate
	opDeleteIfExpired
)

// op is the folded operation on one row.
type op struct {
	kind opKind
	pk   []byte
	sk   []byte
	// last is the index in the batch of the last mutation folded in.
	last int
	// item is the whole item of a put.
	item map[string]types.AttributeValue
	// set and remove are an update's attribute changes; marker says the
	// update (re)writes the row marker.
	set    map[string]types.AttributeValue
	remove map[string]bool
	marker bool
	// neverExpires: an update wrote a part that never expires, so the
	// item's native TTL must go. maxExp is the latest expiry it wrote.
	neverExpires bool
	maxExp       int64
	// drop: an store.ExpiryDrop upsert was folded in, so the item carries
	// no native TTL (only dropping the table removes it).
	drop bool
}

// noteMode records r's expiry mode and, for a put, removes the native TTL
// of an item that must have none.
func (o *op) noteMode(r *kit.ResolvedMutation) {
	if r.Kind == store.Upsert && r.Expiry == store.ExpiryDrop {
		o.drop = true
	}
	if o.drop && o.item != nil {
		delete(o.item, attrTTL)
	}
}

func (o *op) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: bytesAttr(o.pk), attrSK: bytesAttr(o.sk)}
}

type phase []*op

// fold folds resolved mutations into phases; now is in Unix ms and margin
// is Options.TTLMargin in ms. Items are
// measured against DynamoDB's item size limit here, before anything is
// sent; an oversize row fails as a *store.MutationError wrapping
// store.ErrTooLarge.
func fold(spec *store.TableSpec, rs []kit.ResolvedMutation, now, margin int64) ([]phase, error) {
	var phases []phase
	// cur maps a row key to its pending op and that op's phase.
	type slot struct {
		o     *op
		phase int
	}
	cur := map[string]slot{}
	for i := range rs {
		r := &rs[i]
		sk := rowSK(r.ClusteringKey)
		k := string(r.PartitionKey) + "\x00" + string(sk)
		s, ok := cur[k]
		var prev *op
		if ok {
			prev = s.o
		}
		next, fresh := apply(spec, prev, r, sk, now, margin)
		next.last = i
		if fresh {
			p := 0
			if ok {
				p = s.phase
				if prev != nil {
					p++ // the row's earlier op stays where it is
				}
			}
			for len(phases) <= p {
				phases = append(phases, nil)
			}
			phases[p] = append(phases[p], next)
			cur[k] = slot{next, p}
		}
	}
	for _, ph := range phases {
		for _, o := range ph {
			if err := checkSize(o); err != nil {
				return nil, &store.MutationError{Index: o.last, Err: err}
			}
		}
	}
	return phases, nil
}

// apply folds r into prev (nil when the row has no pending op in its
// current phase). It returns the op to use and whether it is a new op that
// must be added to a phase (as opposed to prev modified in place).
func apply(spec *store.TableSpec, prev *op, r *kit.ResolvedMutation, sk []byte, now, margin int64) (*op, bool) {
	full := r.Kind == store.Upsert && len(r.Cells) == len(spec.Values)
	newOp := func(kind opKind) *op { return &op{kind: kind, pk: r.PartitionKey, sk: sk} }
	switch {
	case full:
		o := newOp(opPut)
		o.item = upsertItem(spec, r, margin)
		o.noteMode(r)
		return replace(prev, o)
	case r.Kind == store.DeleteRow:
		return replace(prev, newOp(opDelete))
	}
	if prev == nil {
		switch r.Kind {
		case store.DeleteIfExpired:
			return newOp(opDeleteIfExpired), true
		default:
			o := newOp(opUpdate)
			o.set, o.remove = map[string]types.AttributeValue{}, map[string]bool{}
			mergeUpdate(spec, o, r)
			return o, true
		}
	}
	switch prev.kind {
	case opPut:
		switch r.Kind {
		case store.Upsert:
			prev.item[attrMarker] = numAttr(expOrNever(r.ExpiresAt))
			for _, c := range r.Cells {
				setCell(spec, prev.item, c)
			}
			setTTL(spec, prev.item, margin)
			prev.noteMode(r)
		case store.DeleteCells:
			for _, c := range r.Cells {
				deleteCell(prev.item, c.Col)
			}
			setTTL(spec, prev.item, margin)
			prev.noteMode(r)
		case store.DeleteIfExpired:
			if !itemLive(spec, prev.item, now) {
				prev.kind, prev.item = opDelete, nil
			}
		}
		return prev, false
	case opDelete:
		switch r.Kind {
		case store.Upsert:
			prev.kind, prev.item = opPut, upsertItem(spec, r, margin)
			prev.noteMode(r)
		case store.DeleteCells, store.DeleteIfExpired:
		}
		return prev, false
	case opUpdate:
		if r.Kind == store.DeleteIfExpired {
			return newOp(opDeleteIfExpired), true
		}
		mergeUpdate(spec, prev, r)
		return prev, false
	default: // opDeleteIfExpired
		if r.Kind == store.DeleteIfExpired {
			return prev, false
		}
		o := newOp(opUpdate)
		o.set, o.remove = map[string]types.AttributeValue{}, map[string]bool{}
		mergeUpdate(spec, o, r)
		return o, true
	}
}

// replace turns prev into o when there is a prev (same phase, same slot),
// or returns o as a new op.
func replace(prev, o *op) (*op, bool) {
	if prev == nil {
		return o, true
	}
	*prev = *o
	return prev, false
}

// mergeUpdate adds a partial Upsert or a DeleteCells to an update.
func mergeUpdate(spec *store.TableSpec, o *op, r *kit.ResolvedMutation) {
	set := func(name string, v types.AttributeValue) { o.set[name] = v; delete(o.remove, name) }
	del := func(name string) { o.remove[name] = true; delete(o.set, name) }
	if r.Kind == store.DeleteCells {
		for _, c := range r.Cells {
			del(vName(c.Col))
			del(eName(c.Col))
			if indexed(spec, c.Col) {
				del(iName(c.Col))
			}
		}
		return
	}
	o.marker = true
	exp := expOrNever(r.ExpiresAt)
	set(attrMarker, numAttr(exp))
	// An ExpiryDrop row must lose its native TTL as one that never
	// expires does.
	o.neverExpires = o.neverExpires || exp == never || r.Expiry == store.ExpiryDrop
	o.maxExp = max(o.maxExp, exp)
	tmp := map[string]types.AttributeValue{}
	for _, c := range r.Cells {
		setCell(spec, tmp, c)
		e := expOrNever(c.ExpiresAt)
		o.neverExpires = o.neverExpires || e == never
		o.maxExp = max(o.maxExp, e)
	}
	for name, v := range maps.All(tmp) {
		set(name, v)
	}
}

// checkSize refuses an operation whose item would exceed DynamoDB's limit.
// For an update only the written attributes are known; the service checks
// the merged item.
func checkSize(o *op) error {
	var n int
	switch o.kind {
	case opPut:
		n = itemSize(o.item)
	case opUpdate:
		n = itemSize(o.key()) + itemSize(o.set) + len(attrTTL) + 12
	default:
		return nil
	}
	if n > maxItemBytes {
		return store.Errorf(store.ErrTooLarge, "item is %d bytes, DynamoDB allows %d", n, maxItemBytes)
	}
	return nil
}
