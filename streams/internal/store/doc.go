// Package store owns the local key-value stores behind weir streams'
// stateful operators: a bounded in-memory write cache (Store) in front of a
// Backend, either Pebble on disk (stores larger than memory spill there) or
// an in-memory sorted map (the test driver).
//
// The cache holds recently read and written entries up to a byte budget.
// Writes stay in the cache, marked dirty, until Flush: Flush hands every
// dirty entry, in the order it first became dirty, to the OnFlush hook (the
// task writes it to the store's changelog topic and, for tables, forwards
// it downstream) and writes them all to the Backend in one batch. When the
// cache passes its budget, Put flushes and then drops the clean entries.
//
// The Backend is local scratch: durability comes from the changelog topic.
// Pebble runs without its write-ahead log, and a store whose directory was
// not closed cleanly (no checkpoint file, see Checkpoint) is wiped and
// restored from the changelog.
package store
