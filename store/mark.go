package store

// Mark returns err marked with kind, one of the sentinels of this package:
// errors.Is matches kind as well as everything err matches, and the text
// is err's alone. Features make their own sentinels with it, so that the
// HTTP layer, which maps only kinds to API codes, answers them without
// knowing the feature:
//
//	ErrNoTable = store.Mark(errors.New("multitable: no such table"), store.ErrNotFound)
func Mark(err, kind error) error { return &marked{err: err, kind: kind} }

// marked is an error of a feature that is also a store sentinel.
type marked struct{ err, kind error }

func (e *marked) Error() string { return e.err.Error() }

func (e *marked) Unwrap() []error { return []error{e.err, e.kind} }
