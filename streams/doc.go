// Package streams is weir's topology DSL over topics: stateless operators,
// stateful aggregations with changelog-backed stores, and windows, scaled
// through consumer groups.
package streams
