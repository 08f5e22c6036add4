// Package keyenc encodes typed key tuples into byte strings whose unsigned
// bytewise order is the tuple order, so that sorted key-value engines
// (Pebble) and binary sort keys (DynamoDB) keep rows in clustering order.
//
// Each component is self-delimiting, so the encoding of a tuple is the
// concatenation of its components' encodings and the encoding of a prefix of
// a tuple is a byte prefix of the tuple's encoding. Components are encoded
// without type tags: the schema supplies the types when decoding.
//
//	int64, timestamp  8 bytes big-endian with the sign bit flipped
//	string, bytes     each 0x00 written as 0x00 0xFF, then the terminator 0x00 0x01
//
// A descending component is the bitwise complement of its ascending
// encoding, which reverses its order; because encodings are prefix-free the
// reversal is exact. The model is the FoundationDB tuple layer and
// CockroachDB's key encoding.
//
// The encoding is part of the stored format: keys written by one release are
// read by the next, in Pebble's files and DynamoDB's binary sort keys, so a
// change to it is a change of on-disk format and needs a migration.
package keyenc
