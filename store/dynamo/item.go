package dynamo

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/ebb-data/ebb/store"
	"github.com/ebb-data/ebb/store/kit"
)

// Item layout (one DynamoDB item per row):
//
//	pk   B  kit.EncodeTuple(partition): the partition key
//	sk   B  0x01 | kit.EncodeClustering(clustering): the sort key; the
//	        0x01 space byte keeps the sort key non-empty for tables without
//	        clustering columns and leaves room for other key spaces
//	x    N  row marker expiry, Unix ms (never = math.MaxInt64); absent when
//	        the item holds no row marker (only left-over cell deletions)
//	vI   S|N|B  value column I (text S, int64 N, timestamp N in Unix ms, bytes B)
//	eI   N  expiry of vI, Unix ms (never = math.MaxInt64); present iff vI is
//	iI   B  for an indexed column I: 16 bytes of SHA-256 of the value's key
//	        encoding, the sort key of the local secondary index
//	ttl  N  epoch seconds at or after which every part of the row has
//	        expired, plus Options.TTLMargin; absent when some part may
//	        never expire. Native TTL works from it as a backstop.
//
// "Never" is stored as the largest int64 rather than as an absent attribute
// so that DeleteIfExpired's condition is one comparison per column and stays
// well inside DynamoDB's 4 KB expression limit at 63 value columns.

const (
	attrPK     = "pk"
	attrSK     = "sk"
	attrMarker = "x"
	attrTTL    = "ttl"

	spaceRow = 0x01

	never = math.MaxInt64

	// maxItemBytes is DynamoDB's item size limit.
	maxItemBytes = 400 * 1024
	// maxRowBytes is what Capabilities reports: the item limit less the
	// attribute names and expiry attributes this layout adds, so that a row
	// kit.ResolveBatch accepts also fits in an item. Items are measured
	// exactly before sending as well.
	maxRowBytes = maxItemBytes - 4096
)

// vName, eName and iName name the value, expiry and index attributes of
// value column i.
func vName(i int) string { return "v" + strconv.Itoa(i) }
func eName(i int) string { return "e" + strconv.Itoa(i) }
func iName(i int) string { return "i" + strconv.Itoa(i) }

func rowSK(ck []byte) []byte {
	return append([]byte{spaceRow}, ck...)
}

func expOrNever(ms int64) int64 {
	if ms == 0 {
		return never
	}
	return ms
}

func numAttr(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func bytesAttr(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }

// encodeValue turns a canonical value into an attribute value.
func encodeValue(v any) types.AttributeValue {
	switch x := v.(type) {
	case string:
		return &types.AttributeValueMemberS{Value: x}
	case int64:
		return numAttr(x)
	case time.Time:
		return numAttr(x.UnixMilli())
	case []byte:
		return bytesAttr(x)
	}
	panic(fmt.Sprintf("dynamo: unreachable value type %T", v)) // values are checked by kit.ResolveBatch
}

// decodeValue turns an attribute value back into a value of type t.
func decodeValue(t store.Type, av types.AttributeValue) (any, error) {
	switch t {
	case store.TypeText:
		if s, ok := av.(*types.AttributeValueMemberS); ok {
			return s.Value, nil
		}
	case store.TypeBytes:
		if b, ok := av.(*types.AttributeValueMemberB); ok {
			if b.Value == nil {
				return []byte{}, nil
			}
			return b.Value, nil
		}
	case store.TypeInt64, store.TypeTimestamp:
		if n, ok := av.(*types.AttributeValueMemberN); ok {
			i, err := strconv.ParseInt(n.Value, 10, 64)
			if err != nil {
				break
			}
			if t == store.TypeTimestamp {
				return time.UnixMilli(i).UTC(), nil
			}
			return i, nil
		}
	}
	return nil, fmt.Errorf("dynamo: stored attribute %T does not hold a %s", av, t)
}

// numOf reads an N attribute; ok is false when it is absent or malformed.
func numOf(item map[string]types.AttributeValue, name string) (int64, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	return i, err == nil
}

func bytesOf(item map[string]types.AttributeValue, name string) []byte {
	if b, ok := item[name].(*types.AttributeValueMemberB); ok {
		return b.Value
	}
	return nil
}

// indexKey is the local secondary index sort key for an indexed value: a
// fixed-size digest, so values of any size can be indexed within DynamoDB's
// 1 KB sort-key limit. Readers compare the stored value itself, so a digest
// collision can never return a wrong row.
func indexKey(v any) []byte {
	sum := sha256.Sum256(kit.EncodeTuple(nil, []any{v}, false))
	return sum[:16]
}

// setCell writes cell c into item.
func setCell(spec *store.TableSpec, item map[string]types.AttributeValue, c kit.ResolvedCell) {
	item[vName(c.Col)] = encodeValue(c.Value)
	item[eName(c.Col)] = numAttr(expOrNever(c.ExpiresAt))
	if indexed(spec, c.Col) {
		item[iName(c.Col)] = bytesAttr(indexKey(c.Value))
	}
}

func deleteCell(item map[string]types.AttributeValue, col int) {
	delete(item, vName(col))
	delete(item, eName(col))
	delete(item, iName(col))
}

func indexed(spec *store.TableSpec, col int) bool {
	for _, ix := range spec.Indexes {
		if spec.ValueIndex(ix.Column) == col {
			return true
		}
	}
	return false
}

// upsertItem builds the whole item an Upsert leaves when it replaces the row.
// margin is Options.TTLMargin in ms.
func upsertItem(spec *store.TableSpec, r *kit.ResolvedMutation, margin int64) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrPK:     bytesAttr(r.PartitionKey),
		attrSK:     bytesAttr(rowSK(r.ClusteringKey)),
		attrMarker: numAttr(expOrNever(r.ExpiresAt)),
	}
	for _, c := range r.Cells {
		setCell(spec, item, c)
	}
	setTTL(spec, item, margin)
	return item
}

// setTTL sets or removes the native TTL attribute of a whole item.
func setTTL(spec *store.TableSpec, item map[string]types.AttributeValue, margin int64) {
	if sec, ok := itemTTL(spec, item, margin); ok {
		item[attrTTL] = numAttr(sec)
	} else {
		delete(item, attrTTL)
	}
}

// itemTTL is the epoch second, margin ms past the moment after which nothing
// of the item is live; ok is false when some part never expires.
func itemTTL(spec *store.TableSpec, item map[string]types.AttributeValue, margin int64) (int64, bool) {
	maxExp := int64(0)
	if x, ok := numOf(item, attrMarker); ok {
		maxExp = x
	}
	for i := range spec.Values {
		if _, ok := item[vName(i)]; !ok {
			continue
		}
		e, ok := numOf(item, eName(i))
		if !ok {
			return 0, false
		}
		maxExp = max(maxExp, e)
	}
	if maxExp == never {
		return 0, false
	}
	return ttlSeconds(maxExp, margin), true
}

// ttlSeconds is the native TTL attribute for a last expiry of ms (Unix ms):
// margin ms later, rounded up to whole seconds, so that the backstop never
// fires while any part is live on ebb's clock, nor within margin of it. It
// saturates instead of overflowing for expiries near the end of time.
func ttlSeconds(ms, margin int64) int64 {
	if ms > math.MaxInt64-margin-999 {
		return math.MaxInt64 / 1000
	}
	return (ms + margin + 999) / 1000
}

// liveAt reports whether an expiry (Unix ms) is still live at now.
func liveAt(exp, now int64) bool { return exp > now }

// decodeItem reads a row's values and marker expiry at time now; live is
// false when nothing of the row is live.
func decodeItem(spec *store.TableSpec, item map[string]types.AttributeValue, now int64) (vals []any, marker time.Time, live bool, err error) {
	if x, ok := numOf(item, attrMarker); ok {
		// The marker's expiry is reported even when only a cell keeps the
		// row alive, as on the embedded backend.
		live = liveAt(x, now)
		if x != never {
			marker = time.UnixMilli(x).UTC()
		}
	}
	vals = make([]any, len(spec.Values))
	for i, col := range spec.Values {
		av, ok := item[vName(i)]
		if !ok {
			continue
		}
		if e, ok := numOf(item, eName(i)); ok && !liveAt(e, now) {
			continue
		}
		if vals[i], err = decodeValue(col.Type, av); err != nil {
			return nil, time.Time{}, false, err
		}
		live = true
	}
	return vals, marker, live, nil
}

// itemLive reports whether anything of an item is live at now.
func itemLive(spec *store.TableSpec, item map[string]types.AttributeValue, now int64) bool {
	if x, ok := numOf(item, attrMarker); ok && liveAt(x, now) {
		return true
	}
	for i := range spec.Values {
		if _, ok := item[vName(i)]; !ok {
			continue
		}
		if e, ok := numOf(item, eName(i)); !ok || liveAt(e, now) {
			return true
		}
	}
	return false
}

// attrSize is DynamoDB's size of one attribute value.
func attrSize(av types.AttributeValue) int {
	switch x := av.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		// About one byte per two significant digits plus one; rounding up
		// keeps the estimate on the safe side.
		return (utf8.RuneCountInString(x.Value)+1)/2 + 1
	}
	return 1
}

// itemSize is DynamoDB's size of an item: attribute names plus values.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + attrSize(v)
	}
	return n
}
