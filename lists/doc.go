// Package lists is ebb's feature-store lists: per-entity lists of items
// ("stories presented to this user"), newest first, where every item expires
// a fixed time (its feature's TTL) after its own timestamp.
//
// # Features
//
// A list feature is identified by (entity type, feature name, version); the
// version "" is the default. Each feature version has a TTL, recorded in
// store.MetaTable (kind "list_feature", keyed by the JSON array of the three
// names, which is unambiguous for any UTF-8 including '#', '|', '/' and NUL),
// and its own table. Giving every feature version its own table is what
// makes DeleteFeatureVersion cheap on every backend: it is one DropTable
// (an excise on Pebble, DeleteTable on DynamoDB, DROP TABLE on CQL), never a
// scan of items. It also makes the list's partition key just the entity ID:
// the table already encodes the triple, so two different
// (entity type, feature, version, entity ID) tuples can never share a
// partition.
//
// The table name is "list_" followed by 32 hex digits of the SHA-256 of the
// feature's meta key, so every process derives the same name for the same
// feature without coordination, and concurrent CreateFeature calls with
// different TTLs are told apart by CreateTable itself (the TTL is the
// table's default TTL, so the specs differ and one of them gets
// store.ErrTableExists). A reverse record (kind "list_table", keyed by table
// name) guards against hash collisions: a name already owned by another
// feature is skipped for the next candidate.
//
// # Items
//
// A feature table is
//
//	partition   entity_id text
//	clustering  item_key  text, descending
//	values      value     bytes, with the local index "by_value"
//	default TTL the feature's TTL (a safeguard for writes without expiry)
//
// where item_key is the item's timestamp as 19 zero-padded decimal digits of
// Unix nanoseconds, '#', and the standard base64 of the MD5 of the value.
// Items therefore sort newest first, items with equal timestamps and
// distinct values coexist, and the timestamp is read back from the key.
//
// Every item is written with its own expiry, timestamp + TTL (rounded up to
// the millisecond, the store's precision), and with its feature's expiry
// mode (Feature.Expiry, a store.ExpiryMode), which says what removes it
// physically: the expiry decorator (package expiry) soon after it expires
// (sweep), the backend's own TTL (native), or the drop of the version's
// table (drop). An item
// already expired when added is not written and is counted as skipped. Get
// never returns an expired item, to the nanosecond: every item lives at
// most the longest TTL its version has had (Feature.MaxTTL) past its
// timestamp, so Get starts its range after the items expired under every
// TTL, and passes over the few in range that expired under a shorter one
// (their exact expiry is read back from the stored one).
//
// A version's TTL changes in place (CreateFeature with another TTL): the
// items added from then on get the new one, the items already added keep
// theirs, and the table keeps the default TTL it was created with (only a
// safeguard for writes that bypass the Service).
//
// # Caps, counts and whole features
//
// A version may cap its lists (Feature.MaxItems): an Add reads the list's
// live keys, and writes its items together with the deletes of the items
// that the merge leaves beyond the cap, the oldest (trim.go says what is
// atomic on which backend). Count reads a list's live keys and counts
// them: no counter is kept, since items leave by expiry without a write
// that could maintain one. DeleteFeature deletes every version of a
// feature, each with DeleteFeatureVersion.
//
// # Concurrency
//
// A Service is safe for concurrent use. It caches feature lookups; a cached
// feature is re-read from the meta table after Options.CacheTTL, and
// at once when its table turns out to be gone (another process deleted the
// version).
package lists
