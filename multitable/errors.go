package multitable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ebb-data/ebb/internal/timefmt"
	"github.com/ebb-data/ebb/store"
)

// Sentinel errors. Each wraps the store sentinel the HTTP layer maps, so
// callers may test for either with errors.Is.
var (
	// ErrNoTable: no logical table of that name exists (or it is being
	// deleted). It wraps store.ErrNotFound.
	ErrNoTable error = store.Mark(store.ErrNotFound, "multitable", "no such table")
	// ErrNoItem: the item does not exist or has expired. It wraps
	// store.ErrNotFound.
	ErrNoItem error = store.Mark(store.ErrNotFound, "multitable", "no such item")
	// ErrConflict: a logical table of that name exists with a different
	// configuration. CreateTable no longer returns it (it changes the
	// table's default TTL and mode in place); it stays for callers that
	// match it. It wraps store.ErrConflict.
	ErrConflict error = store.Mark(store.ErrConflict, "multitable", "table exists with a different configuration")
	// ErrDeleting: the table is being deleted (a delete failed part way);
	// repeat the delete before creating it again. It wraps
	// store.ErrConflict.
	ErrDeleting error = store.Mark(store.ErrConflict, "multitable", "table is being deleted")
	// ErrPrecondition: a conditional write's precondition (create only,
	// or the item's version) did not hold. Nothing was written. It wraps
	// store.ErrConflict.
	ErrPrecondition error = store.Mark(store.ErrConflict, "multitable", "precondition failed")
	// ErrInvalid: a bad table name, key, timestamp, TTL, attribute
	// document, limit or page token. Nothing was written. It wraps
	// store.ErrInvalid.
	ErrInvalid error = store.Mark(store.ErrInvalid, "multitable", "invalid argument")
	// ErrDropMode: a logical table cannot take store.ExpiryDrop. Its items
	// share one physical table that is never dropped, and deleting the
	// table finds its rows through listing rows that reads hide once
	// expired, so an expired item would stay on disk for good. It wraps
	// store.ErrInvalid.
	ErrDropMode error = store.Mark(store.ErrInvalid, "multitable", "expiry mode drop needs a table of its own (shared tables take sweep or native)")
	// ErrTooLarge: the attribute document exceeds MaxAttributesBytes.
	// Nothing was written. It wraps store.ErrTooLarge.
	ErrTooLarge error = store.Mark(store.ErrTooLarge, "multitable", "too large")
)

// Limits.
const (
	// MaxNameLen bounds a logical table name (see NamePattern).
	MaxNameLen = 128
	// MaxKeyBytes bounds an item key: 1..MaxKeyBytes bytes of UTF-8, a NUL
	// byte counting as two because the key encoding escapes it. Together
	// with the timestamp, the escaped key fits the store's 1024-byte
	// clustering-key limit.
	MaxKeyBytes = 1000
	// MaxAttributesBytes bounds an item's attribute document, measured as
	// compact JSON (insignificant white space removed): 256 KiB.
	MaxAttributesBytes = 256 << 10
)

// NamePattern is what a logical table name must match.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func invalid(format string, args ...any) error {
	return store.Errorf(ErrInvalid, "%s", fmt.Sprintf(format, args...))
}

// CheckName validates a logical table name.
func CheckName(name string) error {
	if !NamePattern.MatchString(name) {
		return invalid("table name %q must match %s", clip(name), NamePattern)
	}
	return nil
}

// CheckKey validates an item key.
func CheckKey(key string) error {
	if key == "" {
		return invalid("empty key")
	}
	if !utf8.ValidString(key) {
		return invalid("key is not valid UTF-8")
	}
	if n := len(key) + strings.Count(key, "\x00"); n > MaxKeyBytes {
		return invalid("key is %d bytes (NUL bytes counting twice), at most %d", n, MaxKeyBytes)
	}
	return nil
}

func checkTimestamp(ts time.Time) error {
	if ts.IsZero() {
		return invalid("timestamp is required")
	}
	// Item timestamps span the years RFC 3339 can write.
	if err := timefmt.Years.Check(ts); err != nil {
		return invalid("%v", err)
	}
	return nil
}

func checkTTL(what string, d time.Duration) error {
	if d < 0 {
		return invalid("%s %s is negative", what, d)
	}
	if d > 0 && d%time.Millisecond != 0 {
		// Expiry is kept to the millisecond; silently rounding a TTL would
		// make an item live shorter or longer than asked.
		return invalid("%s %s is not a whole number of milliseconds", what, d)
	}
	return nil
}

// compactAttributes validates an attribute document and returns it as
// compact JSON. Absent or null attributes are the empty object.
func compactAttributes(raw json.RawMessage) ([]byte, error) {
	trimmed := strings.TrimSpace(string(raw))
	if trimmed == "" || trimmed == "null" {
		return []byte("{}"), nil
	}
	if trimmed[0] != '{' {
		return nil, invalid("attributes must be a JSON object")
	}
	var buf bytes.Buffer
	buf.Grow(len(trimmed))
	if err := json.Compact(&buf, raw); err != nil {
		return nil, invalid("attributes are not valid JSON: %v", err)
	}
	if buf.Len() > MaxAttributesBytes {
		return nil, store.Errorf(ErrTooLarge, "attributes are %d bytes as compact JSON, at most %d", buf.Len(), MaxAttributesBytes)
	}
	return buf.Bytes(), nil
}

// clip shortens a user-supplied string for an error message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:61] + "..."
}
