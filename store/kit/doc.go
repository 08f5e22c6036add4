// Package kit is the implementers' side of the store contract: what every
// backend (and a decorator that must refuse input exactly as a backend
// would) uses to validate and resolve a batch, encode keys and key ranges,
// and compare values, so that bad input is refused the same way
// everywhere; and what is built once on the contract for everyone: Query,
// which reads a page of whole rows over a Store's Scan, and SpecCache, the
// one cache of table specs the decorators keep. Features use package store,
// and Query to read whole rows.
//
// Keys are encoded with package keyenc; a resolved mutation carries its
// canonical values, its encoded keys and absolute expiries in Unix
// milliseconds, which is what a backend writes.
package kit
