// Package stdout is the "stdout" sink: it prints the records of its
// topics on the process's standard output, one line each, in the formats
// of the file sink (filesink.Writer: json, raw, envelope).
package stdout
