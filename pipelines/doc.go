// Package pipelines owns weir's HCL language: parsing, validation with
// file:line:col diagnostics, building the pipeline graph, and running and
// reloading it.
package pipelines
