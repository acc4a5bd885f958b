package pipelines

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// DiagLine renders one diagnostic as "file:line:col: severity: summary:
// detail" (no snippet): the form of golden files and logs.
func DiagLine(d *hcl.Diagnostic) string {
	sev := "error"
	if d.Severity == hcl.DiagWarning {
		sev = "warning"
	}
	msg := d.Summary
	if d.Detail != "" {
		msg += ": " + d.Detail
	}
	if d.Subject == nil {
		return sev + ": " + msg
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, sev, msg)
}

// SortDiagnostics orders diagnostics by file, line and column (those
// without a location first), keeping the order of equal positions.
func SortDiagnostics(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		if a == nil || b == nil {
			return a == nil && b != nil
		}
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Start.Line != b.Start.Line {
			return a.Start.Line < b.Start.Line
		}
		return a.Start.Column < b.Start.Column
	})
}

// WriteDiagnostics prints diagnostics for people: the file:line:col line,
// then the source line with the subject underlined. files gives the
// sources (nil: no snippets).
func WriteDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics, color bool) error {
	bw := bufio.NewWriter(w)
	red, bold, reset := "", "", ""
	if color {
		red, bold, reset = "\x1b[31m", "\x1b[1m", "\x1b[0m"
	}
	for _, d := range diags {
		fmt.Fprintf(bw, "%s%s%s\n", bold, DiagLine(d), reset)
		if d.Subject == nil {
			continue
		}
		f := files[d.Subject.Filename]
		if f == nil {
			continue
		}
		line, lineStart, ok := sourceLine(f.Bytes, d.Subject.Start.Line)
		if !ok {
			continue
		}
		num := fmt.Sprintf("%d", d.Subject.Start.Line)
		pad := strings.Repeat(" ", len(num))
		fmt.Fprintf(bw, "%s |\n%s | %s\n", pad, num, strings.ReplaceAll(line, "\t", " "))
		start := d.Subject.Start.Byte - lineStart
		if start < 0 || start > len(line) {
			start = len(line)
		}
		end := len(line) + 1
		if d.Subject.End.Line == d.Subject.Start.Line {
			end = d.Subject.End.Byte - lineStart
		}
		n := runeCols(line, end) - runeCols(line, start)
		if n < 1 {
			n = 1
		}
		fmt.Fprintf(bw, "%s | %s%s%s%s\n\n", pad, strings.Repeat(" ", runeCols(line, start)), red, strings.Repeat("^", n), reset)
	}
	return bw.Flush()
}

// sourceLine returns line n (1-based) of src and its first byte's
// offset.
func sourceLine(src []byte, n int) (string, int, bool) {
	off := 0
	for i := 1; off <= len(src); i++ {
		rest := src[off:]
		line := rest
		next := len(src) + 1
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			line, next = rest[:j], off+j+1
		}
		if i == n {
			return strings.TrimRight(string(line), "\r"), off, true
		}
		off = next
	}
	return "", 0, false
}

// runeCols is the display width of the first n bytes of s (HCL columns
// count characters).
func runeCols(s string, n int) int {
	if n > len(s) {
		return len([]rune(s)) + n - len(s)
	}
	if n < 0 {
		return 0
	}
	return len([]rune(s[:n]))
}
