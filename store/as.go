package store

// Wrapper is implemented by a Store that decorates another (the expiry and
// meter decorators): Unwrap returns the Store it wraps, so that As can reach
// an optional interface the wrapper does not declare.
type Wrapper interface {
	Unwrap() Store
}

// As returns the first Store of st's chain that is a T: st itself, then
// what st.Unwrap returns, and so on, as errors.As walks an error's chain.
// It reports false when no Store of the chain is a T.
//
// A wrapper that must see every write declares the write-like optional
// interfaces (DeferredWriter) itself, so that As stops at it and the write
// goes through it; read-only and administrative ones (Checkpointer,
// HealthReporter, a backend's concrete type) are found on the store below.
// See the package comment.
func As[T any](st Store) (T, bool) {
	for st != nil {
		if t, ok := st.(T); ok {
			return t, true
		}
		w, ok := st.(Wrapper)
		if !ok {
			break
		}
		st = w.Unwrap()
	}
	var zero T
	return zero, false
}
