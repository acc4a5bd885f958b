// Package store owns the local key-value stores behind weir streams'
// stateful operators: a bounded in-memory write cache (Store) in front of a
// Backend, either Pebble on disk (stores larger than memory spill there) or
// an in-memory sorted map (the test driver).
//
// The cache holds recently read and written entries up to a byte budget.
// Writes stay in the cache, marked dirty, until Flush: Flush hands every
// dirty entry, in the order it first became dirty, to the OnFlush hook (the
// task writes it to the store's changelog topic and, for tables, forwards
// it downstream). The Backend is written lazily: entries changed since the
// last write-back go to it in one batch only when the cache passes its
// budget (Put flushes, writes back, then drops every entry), on Scan, and
// on Sync (before a clean close). A key updated at every commit is thus
// written to the changelog at every commit but to the Backend about once
// per cache turnover; the cache is always the newer copy, and every key
// not in it has its current value in the Backend.
//
// The Backend is local scratch: durability comes from the changelog topic.
// Pebble runs without its write-ahead log, and a store whose directory was
// not closed cleanly (no checkpoint file, see Checkpoint) is wiped and
// restored from the changelog.
package store
