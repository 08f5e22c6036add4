package store

import (
	"context"
	"time"
)

// TableClass is a provider's storage class of a table, which sets what
// its storage and its requests cost. The zero value is the provider's
// default class (ClassStandard on DynamoDB).
type TableClass string

// The table classes. They are DynamoDB's: Standard, and Standard-IA
// (Standard-Infrequent Access), whose storage costs less and whose reads
// and writes cost more, "the most cost-effective option for tables where
// storage is the dominant cost" (Amazon DynamoDB Developer Guide,
// "Considerations when choosing a table class").
const (
	ClassStandard         TableClass = "standard"
	ClassInfrequentAccess TableClass = "standard_ia"
)

// ParseTableClass reads a class by its name; "" is the default class.
func ParseTableClass(s string) (TableClass, error) {
	switch c := TableClass(s); c {
	case "", ClassStandard, ClassInfrequentAccess:
		return c, nil
	}
	return "", Errorf(ErrInvalid, "table class %q: want standard or standard_ia", s)
}

// Or returns c, or ClassStandard when c is the default class.
func (c TableClass) Or() TableClass {
	if c == "" {
		return ClassStandard
	}
	return c
}

// ClassRules are a provider's limits on table-class changes, the one
// model of them: a backend reports its provider's in
// Capabilities().Classes and checks SetTableClass against them, and the
// shard manager's planner defers, with the same rules, every change the
// provider would refuse. The zero value means the backend has no classes.
type ClassRules struct {
	// Provider names the provider in messages.
	Provider string `json:"provider,omitempty"`
	// MaxChanges is how many class changes a table may make within any
	// Window.
	MaxChanges int           `json:"max_changes,omitempty"`
	Window     time.Duration `json:"window,omitempty"`
}

// DynamoDBClasses: "No more than two table class updates on your table
// are allowed in a 30-day trailing period." (Amazon DynamoDB Developer
// Guide, "Considerations when choosing a table class".)
var DynamoDBClasses = ClassRules{Provider: "DynamoDB", MaxChanges: 2, Window: 30 * 24 * time.Hour}

// Supported reports whether the backend's tables have classes.
func (r ClassRules) Supported() bool { return r.MaxChanges > 0 && r.Window > 0 }

// Next returns how many changes of history count at now and when one
// more change is allowed: now when it is allowed now, otherwise the moment
// enough of them leave the window. A change exactly Window old has left it.
func (r ClassRules) Next(history []time.Time, now time.Time) (int, time.Time) {
	return r.window().NextToOnDemand(history, now)
}

// Recent returns the changes of history within the window ending at now,
// in order: those that still count.
func (r ClassRules) Recent(history []time.Time, now time.Time) []time.Time {
	return r.window().Recent(history, now)
}

// Allowed is Next over a history kept as Unix milliseconds, as the
// remote backends keep it in their catalogs: the history that still
// counts, and whether one more change at now is allowed.
func (r ClassRules) Allowed(history []int64, now time.Time) ([]int64, bool) {
	return r.window().Allowed(history, now)
}

// window counts changes as SwitchRules counts switches: the same sliding
// window, with another limit.
func (r ClassRules) window() SwitchRules {
	return SwitchRules{Provider: r.Provider, MaxToOnDemand: r.MaxChanges, Window: r.Window}
}

// ClassSetter is the optional part of a store whose tables have classes
// (Capabilities().Classes.Supported()); find it with As.
type ClassSetter interface {
	// SetTableClass moves a table to class c. Setting the class a table
	// has is a no-op; a change the provider's ClassRules would refuse is
	// ErrCapacityLimit and changes nothing.
	SetTableClass(ctx context.Context, table string, c TableClass) error
}
