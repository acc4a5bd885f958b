// Package expr is the expression language of weir's pipelines: HCL
// native-syntax expressions over records, compiled once into Go closures
// (Fn) over a small native value domain (value.go), with Terraform's
// function names plus weir's own (funcs.go).
//
// A transform expression reads the record as record ("record.status >=
// 500", "upper(record.service)"); an aggregate expression reads the
// names in Compiler.Scope (record, agg, key). Sub-expressions that do not
// read per-record data (var.x, local.y, env("X"), literals) are folded
// into constants at compile time; expression kinds without a native form
// (for expressions, splats) fall back to HCL's own evaluator over a cty
// copy of the record. Compiled and HCL-evaluated expressions agree
// (TestCompiledAgreesWithHCL), except that a missing field reads as null
// all the way down and length also counts a string's characters.
//
// The package knows nothing of pipelines: the loader (package pipelines)
// checks references and function names against its own scope before
// calling Compiler.Compile, and decodes record values into Objects.
//
// # Files
//
//	expr.go   Compiler: constant folding, operators, traversals, calls
//	funcs.go  the functions (cty and native forms); cty conversions
//	value.go  Object and the native value domain: equality, ordering, arithmetic
package expr
