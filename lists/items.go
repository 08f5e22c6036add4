package lists

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/keyenc"
)

// Item is one list item.
type Item struct {
	Value []byte
	// Timestamp is the item's time, nanosecond precision, from 1970 up to
	// the largest time Unix nanoseconds hold (year 2262).
	Timestamp time.Time
}

// AddResult says what Add did.
type AddResult struct {
	// Written counts items written: every item not skipped. An item given
	// twice (same value and timestamp) is the same item, written once and
	// counted twice.
	Written int
	// SkippedExpired counts items not written because timestamp + TTL was
	// already at or before now.
	SkippedExpired int
	// Trimmed counts items the feature's MaxItems removed from the list:
	// its oldest items deleted by this Add, and items of this Add that
	// were already beyond the cap (counted as written, never stored).
	Trimmed int
}

// item_key layout: 19 digits of Unix nanoseconds, '#', base64 MD5.
const (
	tsDigits   = 19
	itemKeyLen = tsDigits + 1 + 24
)

// maxTimestamp is the last time Unix nanoseconds (int64) can hold.
var maxTimestamp = timefmt.UnixNanos.Max

// appendTS appends the 19-digit zero-padded decimal of ns (>= 0).
func appendTS(dst []byte, ns int64) []byte {
	var buf [tsDigits]byte
	for i := tsDigits - 1; i >= 0; i-- {
		buf[i] = byte('0' + ns%10)
		ns /= 10
	}
	return append(dst, buf[:]...)
}

// ItemKey returns the item_key of an item: the timestamp as 19 zero-padded
// digits of Unix nanoseconds, '#', and the standard base64 of the value's
// MD5. The timestamp must be within the range Item documents.
func ItemKey(ts time.Time, value []byte) string {
	b := make([]byte, 0, itemKeyLen)
	b = appendTS(b, ts.UnixNano())
	b = append(b, '#')
	sum := md5.Sum(value)
	b = base64.StdEncoding.AppendEncode(b, sum[:])
	return string(b)
}

// parseItemKey returns the timestamp an item_key starts with.
func parseItemKey[K ~string | ~[]byte](key K) (time.Time, error) {
	if len(key) != itemKeyLen || key[tsDigits] != '#' {
		return time.Time{}, fmt.Errorf("lists: malformed item key %q", key)
	}
	t, err := parseDigits(key[:tsDigits])
	if err != nil {
		return time.Time{}, fmt.Errorf("lists: malformed item key %q", key)
	}
	return t, nil
}

// parseDigits parses an item key's 19 timestamp digits.
func parseDigits[K ~string | ~[]byte](key K) (time.Time, error) {
	// 19 digits always fit a uint64; the sign check catches the values
	// past math.MaxInt64 that no item key holds.
	if len(key) != tsDigits {
		return time.Time{}, fmt.Errorf("lists: malformed timestamp digits %q", key)
	}
	var ns uint64
	for i := range tsDigits {
		d := key[i] - '0'
		if d > 9 {
			return time.Time{}, fmt.Errorf("lists: malformed timestamp digits %q", key)
		}
		ns = ns*10 + uint64(d)
	}
	if ns > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("lists: malformed timestamp digits %q", key)
	}
	return time.Unix(0, int64(ns)).UTC(), nil
}

// encodedItemTime reads an item's timestamp from its encoded clustering key
// (a RawRow's, see store.Scanner), decoding the key into buf, which it
// returns for reuse.
func encodedItemTime(buf, enc []byte) (time.Time, []byte, error) {
	key, rest, err := keyenc.AppendDecodedBytes(buf[:0], enc, true)
	if err != nil || len(rest) != 0 {
		return time.Time{}, buf, fmt.Errorf("lists: malformed item key %x", enc)
	}
	ns, err := keyNanos(key, 0)
	if err != nil {
		return time.Time{}, key, err
	}
	return time.Unix(0, ns).UTC(), key, nil
}

// encodedItemNanos reads an item's timestamp, in Unix nanoseconds, from its
// encoded clustering key. It runs once per item read: a key whose encoding
// holds no escape (every key of digits, '#' and base64 is one) is read in
// place, its bytes inverted (the key sorts descending), without decoding;
// any other goes through encodedItemTime.
func encodedItemNanos(enc []byte) (int64, error) {
	// A descending byte string is its bytes inverted, then the inverted
	// escape and terminator; an inverted escape within would be an escaped
	// NUL, which no item key holds.
	if len(enc) == itemKeyLen+2 && enc[itemKeyLen] == ^byte(0x00) && enc[itemKeyLen+1] == ^byte(0x01) &&
		bytes.IndexByte(enc[:itemKeyLen], ^byte(0x00)) < 0 {
		return keyNanos(enc[:itemKeyLen], 0xFF)
	}
	ts, _, err := encodedItemTime(nil, enc)
	if err != nil {
		return 0, err
	}
	return ts.UnixNano(), nil
}

// keyNanos parses the timestamp of an item key whose every byte is XORed
// with flip (0xFF: the key as a descending encoding holds it, 0: plain),
// the digits eight at a time.
func keyNanos(key []byte, flip byte) (int64, error) {
	if len(key) != itemKeyLen || key[tsDigits]^flip != '#' {
		return 0, fmt.Errorf("lists: malformed item key %x", key)
	}
	mask := uint64(flip) * 0x0101010101010101
	hi, ok1 := digits8(binary.LittleEndian.Uint64(key[0:8]) ^ mask)
	mid, ok2 := digits8(binary.LittleEndian.Uint64(key[8:16]) ^ mask)
	var lo uint64
	for _, c := range key[16:tsDigits] {
		d := c ^ flip - '0'
		if d > 9 {
			ok1 = false
		}
		lo = lo*10 + uint64(d)
	}
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("lists: malformed item key %x", key)
	}
	// 16 digits always fit; the last three may carry past math.MaxInt64,
	// which no item key holds.
	top := hi*100_000_000 + mid
	if top > (math.MaxInt64-lo)/1000 {
		return 0, fmt.Errorf("lists: malformed item key %x", key)
	}
	return int64(top*1000 + lo), nil
}

// digits8 parses 8 decimal digits, the bytes of w in little-endian order,
// in a few word operations (a SWAR parse: pairs, then quads, then the
// eight).
func digits8(w uint64) (uint64, bool) {
	v := w - 0x3030303030303030
	// Every byte must now be 0..9: a byte below '0' wrapped and set its top
	// bit, one above '9' sets it when 0x76 is added.
	if (v|(v+0x7676767676767676))&0x8080808080808080 != 0 {
		return 0, false
	}
	v = v*10 + v>>8
	v = ((v&0x000000FF000000FF)*(100+(1000000<<32)) + ((v>>16)&0x000000FF000000FF)*(1+(10000<<32))) >> 32
	return v, true
}

func checkTimestamp(ts time.Time) error {
	if err := timefmt.UnixNanos.Check(ts); err != nil {
		return store.Errorf(store.ErrInvalid, "%v", err)
	}
	return nil
}

func checkEntity(entityID string) error {
	return checkName("entity ID", entityID, false)
}

// ceilMilli rounds t up to the millisecond, the store's expiry precision,
// so that the store never hides an item before its exact expiry.
func ceilMilli(t time.Time) time.Time {
	r := t.Truncate(time.Millisecond)
	if r.Before(t) {
		r = r.Add(time.Millisecond)
	}
	return r
}

// Add adds items to the list of entityID. Each item expires at its
// timestamp + the feature's TTL; an item already expired at now is skipped
// and counted. Items with equal timestamps and distinct values coexist; an
// item with the same timestamp and value as an existing one replaces it.
//
// At most MaxItemsPerAdd items, each value at most MaxValueBytes. A refused
// Add writes nothing and returns a *store.MutationError naming the item (wrapping
// store.ErrInvalid or store.ErrTooLarge), or an error wrapping
// ErrFeatureNotFound.
//
// The items go out in one Write, atomic for the list when the backend
// reports atomic partition batches of that size; otherwise in batches of
// Capabilities().MaxAtomicBatch, each atomic, so a failed Add may have
// written some of its items. Retrying it is always safe.
//
// When the feature has a cap (Feature.MaxItems), the Add reads the list's
// keys first and deletes the items beyond the cap, the oldest, in the
// same Write as its own items (see addCapped for what is atomic where).
func (s *Service) Add(ctx context.Context, id FeatureID, entityID string, items []Item) (AddResult, error) {
	if err := checkEntity(entityID); err != nil {
		return AddResult{}, err
	}
	if len(items) > MaxItemsPerAdd {
		return AddResult{}, store.Errorf(store.ErrInvalid, "%d items, at most %d per add", len(items), MaxItemsPerAdd)
	}
	for i, it := range items {
		if len(it.Value) > MaxValueBytes {
			return AddResult{}, &store.MutationError{Noun: "item", Index: i, Err: store.Errorf(store.ErrTooLarge, "value is %d bytes, at most %d", len(it.Value), MaxValueBytes)}
		}
		if err := checkTimestamp(it.Timestamp); err != nil {
			return AddResult{}, &store.MutationError{Noun: "item", Index: i, Err: err}
		}
	}
	var res AddResult
	err := s.withFeature(ctx, id, func(f Feature) error {
		res = AddResult{}
		muts := s.mutations(f, entityID, items, &res)
		if f.MaxItems > 0 {
			return s.addCapped(ctx, f, entityID, muts, &res)
		}
		return s.write(ctx, f.Table, muts)
	})
	s.m.trimmed.Add(float64(res.Trimmed))
	if err != nil {
		return AddResult{}, err
	}
	s.m.written.Add(float64(res.Written))
	s.m.skipped.Add(float64(res.SkippedExpired))
	return res, nil
}

// mutations builds the upserts of the live items, one per distinct key:
// DynamoDB refuses a transaction that touches one item twice.
func (s *Service) mutations(f Feature, entityID string, items []Item, res *AddResult) []store.Mutation {
	now := s.now()
	partition := []any{entityID}
	muts := make([]store.Mutation, 0, len(items))
	var seen map[string]int
	if len(items) > 1 {
		seen = make(map[string]int, len(items))
	}
	for _, it := range items {
		exp := it.Timestamp.Add(f.TTL)
		if !exp.After(now) {
			res.SkippedExpired++
			continue
		}
		res.Written++
		key := ItemKey(it.Timestamp, it.Value)
		m := store.Mutation{
			Partition:  partition,
			Clustering: []any{key},
			Cells:      []store.Cell{{Column: colValue, Value: nonNil(it.Value)}},
			ExpiresAt:  ceilMilli(exp),
			Expiry:     f.Expiry,
		}
		if seen != nil {
			if i, dup := seen[key]; dup {
				muts[i] = m
				continue
			}
			seen[key] = len(muts)
		}
		muts = append(muts, m)
	}
	return muts
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// write sends muts in one Write when the backend applies it atomically, or
// in atomic chunks of the backend's largest atomic batch.
func (s *Service) write(ctx context.Context, table string, muts []store.Mutation) error {
	chunk := len(muts)
	if s.caps.AtomicPartitionBatch && s.caps.MaxAtomicBatch > 0 && s.caps.MaxAtomicBatch < chunk {
		chunk = s.caps.MaxAtomicBatch
	}
	for len(muts) > 0 {
		n := min(chunk, len(muts))
		if err := s.st.Write(ctx, table, muts[:n]); err != nil {
			return err
		}
		muts = muts[n:]
	}
	return nil
}

// Get returns up to limit live items of the list of entityID whose
// timestamp is at or after minTimestamp (the zero time: no bound), newest
// first; items with equal timestamps come in descending order of their
// item keys. limit is 1..store.MaxLimit, or zero for store.DefaultLimit.
// A list never written is empty.
func (s *Service) Get(ctx context.Context, id FeatureID, entityID string, minTimestamp time.Time, limit int) ([]Item, error) {
	var out []Item
	_, _, err := s.Scan(ctx, id, entityID, Read{MinTimestamp: minTimestamp, Limit: limit}, func(it Item) error {
		if out == nil {
			out = make([]Item, 0, min(limit, 128))
		}
		it.Value = bytes.Clone(it.Value)
		out = append(out, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []Item{}
	}
	return out, nil
}

// Read selects a page of one list's items, newest first.
type Read struct {
	// MinTimestamp bounds the items' timestamps from below, inclusive;
	// the zero time sets no bound.
	MinTimestamp time.Time
	// Limit is the page size, 1..store.MaxLimit; zero means
	// store.DefaultLimit, as it does for the HTTP API.
	Limit int
	// PageToken resumes after the last item of a previous page (its
	// NextPageToken); empty starts at the newest item.
	PageToken string
	// MaxBytes, when positive, ends the page early, with a next page
	// token, once the values handed out add up to at least MaxBytes. A
	// page always holds at least one item when one is in range, so it may
	// exceed MaxBytes by at most one value. Zero bounds the page by Limit
	// alone.
	MaxBytes int
	// Stamp, when not nil, is filled in with what the page depends on,
	// for Fresh (see Stamp).
	Stamp *Stamp
}

// errPageFull stops a scan that reached Read.MaxBytes.
var errPageFull = errors.New("lists: page full")

// pageTokenVersion leads list page tokens, so the format can change.
const pageTokenVersion = 1

// Scan calls fn with each item of the page rd selects, in Get's order,
// and returns how many it handed out and the token of the next page,
// without copying the items: the Value fn sees aliases the store's
// buffers and is valid only until fn returns (a server encodes it straight
// into a response). The token is empty when the page is not full (by
// Limit or, when set, MaxBytes); a full
// page's token may lead to an empty page. An error from fn stops the scan
// and is returned. fn is never handed an item twice.
func (s *Service) Scan(ctx context.Context, id FeatureID, entityID string, rd Read, fn func(Item) error) (n int, next string, err error) {
	if err := checkEntity(entityID); err != nil {
		return 0, "", err
	}
	limit, minTimestamp := rd.Limit, rd.MinTimestamp
	if limit == 0 {
		limit = store.DefaultLimit
	}
	if err := store.CheckLimit(limit); err != nil {
		return 0, "", err
	}
	var after string // the item key the page resumes after
	if rd.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(rd.PageToken)
		if err != nil || len(b) != 1+itemKeyLen || b[0] != pageTokenVersion {
			return 0, "", store.Errorf(store.ErrInvalid, "malformed page_token")
		}
		if _, err := parseItemKey(b[1:]); err != nil {
			return 0, "", store.Errorf(store.ErrInvalid, "malformed page_token")
		}
		after = string(b[1:])
	}
	var last []byte
	var size int // value bytes handed out, for rd.MaxBytes
	var full bool
	// skipped: a row was passed over as expired (exactlyLive); more: the
	// store had rows past the page. Both mean a short page has a next one.
	var skipped, more bool
	err = s.withFeature(ctx, id, func(f Feature) error {
		if n > 0 {
			// The table went away after items were handed out: the
			// feature version was deleted during the read.
			return store.Errorf(ErrFeatureNotFound, "%s (deleted during the read)", id)
		}
		// Every item of the feature lives at most MaxTTL (the TTL, or a
		// longer one it had when the item was added) past its timestamp,
		// so the live items are among those with timestamp > now -
		// MaxTTL: the range starts there, items expired under every TTL
		// are never even read, and the store hides the others at their
		// own expiry.
		nowT := s.now()
		low := nowT.Add(-f.MaxTTL).Add(time.Nanosecond)
		if minTimestamp.After(low) {
			low = minTimestamp
		}
		if low.After(maxTimestamp) {
			return nil
		}
		q := store.Query{Partition: []any{entityID}, Limit: limit}
		if low.After(time.Unix(0, 0)) {
			q.Low = store.Bound{Values: []any{string(appendTS(nil, low.UnixNano()))}, Inclusive: true}
		}
		if after != "" {
			// Newest first: the next page holds the smaller keys.
			q.High = store.Bound{Values: []any{after}}
		}
		// Scan rather than Query: the timestamp is read from the encoded
		// key and the value handed out in place, no allocation per item.
		// last holds the encoded key of the last row examined, decoded
		// only when a page token is made of it.
		last = make([]byte, 0, itemKeyLen+2)
		now := nowT.UnixNano()
		stamp := rd.Stamp
		if stamp != nil {
			s.stampStart(stamp, f, entityID, now)
			if stamp.kept {
				q.Tally = &stamp.tally
			}
		}
		storeNext, err := s.st.Scan(ctx, f.Table, q, func(r *store.RawRow) error {
			v := r.Values[0]
			if v == nil {
				if stamp != nil {
					stamp.kept = false // rare; not worth a bound of its own
				}
				return nil // no live value: the row is on its way out
			}
			ts, err := encodedItemNanos(r.Clustering)
			if err != nil {
				return err
			}
			last = append(last[:0], r.Clustering...)
			live := exactlyLive(ts, r.ExpiresAt, now)
			if stamp != nil {
				stamp.stampRow(ts, r.ExpiresAt, live, f.MaxTTL)
			}
			if !live {
				// Added under a shorter TTL than the longest the version
				// had (see Feature.MaxTTL): the range cannot tell, and the
				// store's expiry is rounded up to the millisecond. The page
				// resumes after it all the same. With one TTL ever, the
				// range already left every such item out.
				skipped = true
				return nil
			}
			n++
			if err := fn(Item{Value: v, Timestamp: time.Unix(0, ts).UTC()}); err != nil {
				return err
			}
			if rd.MaxBytes > 0 {
				if size += len(v); size >= rd.MaxBytes {
					full = true
					return errPageFull
				}
			}
			return nil
		})
		more = storeNext != nil
		return err
	})
	if rd.Stamp != nil {
		// A page cut short by MaxBytes depends on the bound; one that
		// failed is not a page.
		rd.Stamp.kept = rd.Stamp.kept && err == nil && !full
		rd.Stamp.items = n
	}
	if err != nil && !(full && errors.Is(err, errPageFull)) {
		return 0, "", err
	}
	s.m.read.Add(float64(n))
	if (n == limit || full || (skipped && more)) && len(last) > 0 {
		key, _, err := keyenc.AppendDecodedBytes([]byte{pageTokenVersion}, last, true)
		if err != nil {
			return 0, "", fmt.Errorf("lists: malformed item key %x", last)
		}
		next = base64.RawURLEncoding.EncodeToString(key)
	}
	return n, next, nil
}

// exactlyLive reports whether an item of timestamp ts (Unix nanoseconds),
// stored with the expiry expMs (Unix milliseconds, rounded up from ts + its
// TTL, see ceilMilli), is still live at now (Unix nanoseconds) to the
// nanosecond. It runs once per item read, so it works in integers rather
// than time.Time.
func exactlyLive(ts, expMs, now int64) bool {
	e := exactExpiry(ts, expMs)
	return e == math.MaxInt64 || now < e
}

// exactExpiry is the instant (Unix nanoseconds) an item of timestamp ts
// stored with the expiry expMs stops being live: ts plus its TTL. Its TTL
// is whole milliseconds, so ceilMilli(ts + ttl) = ceilMilli(ts) + ttl
// gives it back. math.MaxInt64 stands for never.
func exactExpiry(ts, expMs int64) int64 {
	if expMs == 0 {
		return math.MaxInt64
	}
	// ts >= 0 (item keys hold no earlier time), so the division rounds down
	// and ceilMs is ts rounded up to the millisecond.
	ceilMs := ts / int64(time.Millisecond)
	if ts%int64(time.Millisecond) != 0 {
		ceilMs++
	}
	ttlMs := expMs - ceilMs
	switch {
	case ttlMs > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64 // a TTL past what nanoseconds hold outlives any now
	case ttlMs < -math.MaxInt64/int64(time.Millisecond):
		return math.MinInt64
	}
	return satAdd(ts, ttlMs*int64(time.Millisecond))
}

// RemoveByValue deletes every item of the list of entityID whose value is
// value, and returns how many live items it deleted. It looks the items up
// by the value index and deletes them in batches of at most RemoveBatch.
// An item with that value added concurrently may survive.
func (s *Service) RemoveByValue(ctx context.Context, id FeatureID, entityID string, value []byte) (int, error) {
	if err := checkEntity(entityID); err != nil {
		return 0, err
	}
	if len(value) > MaxValueBytes {
		return 0, store.Errorf(store.ErrTooLarge, "value is %d bytes, at most %d", len(value), MaxValueBytes)
	}
	removed := 0
	err := s.withFeature(ctx, id, func(f Feature) error {
		partition := []any{entityID}
		keys, err := s.st.QueryIndex(ctx, f.Table, ixByValue, partition, nonNil(value))
		if err != nil {
			return err
		}
		// The store resolves expiry to the millisecond, so it may still
		// list an item that expired less than a millisecond ago. Such an
		// item is deleted with the rest but not counted: it was no longer
		// in the list.
		live := s.now().Add(-f.MaxTTL)
		batch := make([]store.Mutation, 0, RemoveBatch)
		for len(keys) > 0 {
			n := min(RemoveBatch, len(keys))
			batch = batch[:0]
			counted := 0
			for _, ck := range keys[:n] {
				batch = append(batch, store.Mutation{Kind: store.DeleteRow, Partition: partition, Clustering: ck})
				if key, _ := ck[0].(string); key != "" {
					if ts, err := parseItemKey(key); err == nil && ts.After(live) {
						counted++
					}
				}
			}
			if err := s.st.Write(ctx, f.Table, batch); err != nil {
				return err
			}
			removed += counted
			keys = keys[n:]
		}
		return nil
	})
	s.m.removed.Add(float64(removed))
	return removed, err
}

// RemoveAll deletes every item of the list of entityID with one partition
// delete.
func (s *Service) RemoveAll(ctx context.Context, id FeatureID, entityID string) error {
	if err := checkEntity(entityID); err != nil {
		return err
	}
	return s.withFeature(ctx, id, func(f Feature) error {
		return s.st.DeletePartition(ctx, f.Table, []any{entityID})
	})
}
