package multitable

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/ebb-data/ebb/internal/parallel"
	"github.com/ebb-data/ebb/store"
)

// MaxBatchGet bounds the keys of one GetMany.
const MaxBatchGet = 100

// PatchItem is what Patch changes in an existing item.
type PatchItem struct {
	Key string
	// Attributes is a JSON merge patch (RFC 7396) applied to the item's
	// attributes: a member set to null removes that attribute, an object
	// merges into an object recursively, anything else replaces the
	// attribute. It must be a JSON object; nil or null changes nothing.
	Attributes json.RawMessage
	// Timestamp, when set, replaces the item's timestamp; else it stays.
	Timestamp *time.Time
	// TTL, when set, gives the item a new expiry TTL after the write (zero:
	// never); else the item keeps its expiry.
	TTL *time.Duration
	// IfVersion, when set, makes the patch fail with ErrPrecondition
	// unless the item is of this Version.
	IfVersion string
}

// Patch merges a partial update into an existing item and returns the
// item as stored. The merge reads the item and writes the result guarded
// by the version it read, starting over if another writer got in between,
// so no concurrent write is lost. A missing or expired item is ErrNoItem;
// a precondition that does not hold is ErrPrecondition; either writes
// nothing.
func (g *Registry) Patch(ctx context.Context, table string, in PatchItem) (Item, error) {
	if err := CheckName(table); err != nil {
		return Item{}, err
	}
	if err := CheckKey(in.Key); err != nil {
		return Item{}, err
	}
	if in.Timestamp != nil {
		if err := checkTimestamp(*in.Timestamp); err != nil {
			return Item{}, err
		}
	}
	if in.TTL != nil {
		if err := checkTTL("ttl", *in.TTL); err != nil {
			return Item{}, err
		}
	}
	if err := checkPrecondition(false, in.IfVersion); err != nil {
		return Item{}, err
	}
	patch, err := decodeObject(in.Attributes)
	if err != nil {
		return Item{}, err
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return Item{}, err
	}
	return g.writeItem(ctx, rec.ref(table), in.Key, "patch", func(cur itemRow) (itemWrite, error) {
		if !cur.ok {
			return itemWrite{}, store.Errorf(ErrNoItem, "%s/%s", table, clip(in.Key))
		}
		if err := cur.holds(table, in.Key, false, in.IfVersion); err != nil {
			return itemWrite{}, err
		}
		attrs, err := mergeAttributes(cur.item.Attributes, patch)
		if err != nil {
			return itemWrite{}, err
		}
		// A patch that keeps the expiry keeps its source; one with a ttl
		// gives the item its own.
		w := itemWrite{ts: cur.item.Timestamp, attrs: attrs, expMs: expMsOf(cur.item.ExpiresAt), src: sourceOf(cur.ver)}
		if in.Timestamp != nil {
			w.ts = time.UnixMilli(in.Timestamp.UnixMilli()).UTC()
		}
		if in.TTL != nil {
			w.expMs, w.src = 0, srcOwn
			if *in.TTL > 0 {
				w.expMs = g.now().Add(*in.TTL).UnixMilli()
			}
		}
		return w, nil
	})
}

// GetMany reads up to MaxBatchGet items of one table: the live ones, in
// the order of keys (a key given twice is answered once), and the keys
// that hold no live item. More keys, or a bad one, is ErrInvalid.
func (g *Registry) GetMany(ctx context.Context, table string, keys []string) (items []Item, missing []string, err error) {
	if err := CheckName(table); err != nil {
		return nil, nil, err
	}
	if len(keys) > MaxBatchGet {
		return nil, nil, invalid("%d keys, at most %d", len(keys), MaxBatchGet)
	}
	uniq := make([]string, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if err := CheckKey(k); err != nil {
			return nil, nil, store.Errorf(nil, "key %d: %w", i, err)
		}
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	rec, err := g.lookup(ctx, table)
	if err != nil {
		return nil, nil, err
	}
	t := rec.ref(table)
	res := make([]itemRow, len(uniq))
	tasks := make([]func(context.Context) error, len(uniq))
	for i, k := range uniq {
		tasks[i] = func(ctx context.Context) error {
			r, err := g.readItem(ctx, t, k)
			res[i] = r
			return err
		}
	}
	if err := parallel.Run(ctx, max(g.opts.ReadParallelism, 1), tasks); err != nil {
		return nil, nil, err
	}
	g.metrics.ops.WithLabelValues("batch_get").Inc()
	items, missing = make([]Item, 0, len(uniq)), []string{}
	for i, r := range res {
		if r.ok {
			items = append(items, r.item)
		} else {
			missing = append(missing, uniq[i])
		}
	}
	return items, missing, nil
}

// checkPrecondition validates a write's precondition: create only, or a
// version, not both.
func checkPrecondition(ifAbsent bool, version string) error {
	if ifAbsent && version != "" {
		return invalid("a write is either create only or conditional on a version, not both")
	}
	return nil
}

// holds checks a write's precondition against the item row as read; the
// write that follows is guarded by that row, so the check holds
// atomically with it.
func (r itemRow) holds(table, key string, ifAbsent bool, version string) error {
	switch {
	case ifAbsent && r.ok:
		return store.Errorf(ErrPrecondition, "%s/%s exists", table, clip(key))
	case version == "":
		return nil
	case !r.ok:
		return store.Errorf(ErrPrecondition, "%s/%s does not exist", table, clip(key))
	case version != "*" && version != r.item.Version:
		return store.Errorf(ErrPrecondition, "%s/%s is at version %s, not %s", table, clip(key), r.item.Version, clip(version))
	}
	return nil
}

// versionOf is the Version of an item row: its write's version, or for an
// item written before items carried versions, its timestamp, which is
// what such an item's guard compares (see itemRow.guard).
func versionOf(ver int64, ts time.Time) string {
	if ver != 0 {
		return strconv.FormatInt(ver, 10)
	}
	return "t" + strconv.FormatInt(ts.UnixMilli(), 10)
}

// decodeObject decodes a JSON object whose numbers keep their text;
// absent or null is nil.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	if trimmed[0] != '{' {
		return nil, invalid("attributes must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, invalid("attributes are not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, invalid("attributes are not valid JSON: data after the object")
	}
	return m, nil
}

// mergeAttributes applies a JSON merge patch to an attribute document and
// returns the result as compact JSON, checked against MaxAttributesBytes.
func mergeAttributes(cur []byte, patch map[string]any) ([]byte, error) {
	if patch == nil {
		return cur, nil
	}
	doc, err := decodeObject(cur)
	if err != nil {
		return nil, err
	}
	merged := mergePatch(doc, patch)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// As written by a put: <, > and & stay as they are.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(merged); err != nil {
		return nil, invalid("attributes: %v", err)
	}
	return compactAttributes(buf.Bytes())
}

// mergePatch is RFC 7396's MergePatch for an object patch: null members
// remove, object members merge recursively, others replace.
func mergePatch(target map[string]any, patch map[string]any) map[string]any {
	if target == nil {
		target = map[string]any{}
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			tv, _ := target[k].(map[string]any)
			target[k] = mergePatch(tv, pv)
		default:
			target[k] = v
		}
	}
	return target
}
