package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"weir/pipelines"
	"weir/pipelines/observe"
)

type topFlags struct {
	admin    adminFlags
	interval time.Duration
	count    int
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		f := &topFlags{}
		cmd := &cobra.Command{
			Use:   "top",
			Short: "A live table of every component of a running weir run: rates, lag, errors, state",
			Long: `Show every source, stream and sink of a running weir run with its records and
bytes per second in and out, lag, errors, dead letters, state and last error,
and the records per second on every edge of the pipeline graph, from the
pipeline API on weir run's admin listener (--admin-addr).

On a terminal the table redraws in place every --interval; q or Ctrl-C
quits. Off a terminal (a pipe, a file) it prints the table once per
interval, blocks separated by a blank line.`,
			Example: `  weir top
  weir top --admin-addr 127.0.0.1:9644 --interval 2s
  weir top --count 1 > snapshot.txt`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runTop(cmd, f)
			},
		}
		addAdminFlags(cmd, &f.admin)
		cmd.Flags().DurationVar(&f.interval, "interval", time.Second, "how often the table is refreshed")
		cmd.Flags().IntVar(&f.count, "count", 0, "stop after this many refreshes (0: until q or Ctrl-C)")
		return cmd
	})
}

func runTop(cmd *cobra.Command, f *topFlags) error {
	if f.interval < 100*time.Millisecond {
		return fmt.Errorf("--interval %s: want at least 100ms", f.interval)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := f.admin.client()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	outFile, _ := out.(*os.File)
	tty := outFile != nil && term.IsTerminal(int(outFile.Fd()))
	nl := "\n"
	if tty {
		// Raw input: q quits without Enter; Ctrl-C arrives as a byte.
		if in := int(os.Stdin.Fd()); term.IsTerminal(in) {
			if old, err := term.MakeRaw(in); err == nil {
				defer func() { _ = term.Restore(in, old) }()
				nl = "\r\n" // raw mode: no newline translation
				keys := make(chan struct{})
				go readQuit(os.Stdin, keys)
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-keys:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
		}
		fmt.Fprint(out, "\x1b[?1049h\x1b[?25l") // alternate screen, hide the cursor
		defer fmt.Fprint(out, "\x1b[?25h\x1b[?1049l")
	}
	tk := time.NewTicker(f.interval)
	defer tk.Stop()
	for n := 0; f.count == 0 || n < f.count; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-tk.C:
			}
		}
		var v observe.View
		err := cl.getJSON(ctx, "/api/v1/pipeline", &v)
		if ctx.Err() != nil {
			return nil
		}
		width := 0
		if tty {
			width, _, _ = term.GetSize(int(outFile.Fd()))
		}
		var lines []string
		if err != nil {
			if !tty {
				return err
			}
			lines = []string{time.Now().Format("15:04:05") + "  " + err.Error()}
		} else {
			lines = topLines(v, cl.base)
		}
		if tty {
			var b strings.Builder
			b.WriteString("\x1b[H")
			for _, l := range lines {
				b.WriteString(clip(l, width))
				b.WriteString("\x1b[K" + nl)
			}
			b.WriteString("\x1b[J")
			io.WriteString(out, b.String())
			continue
		}
		if n > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, strings.Join(lines, "\n"))
	}
	return nil
}

// readQuit signals on keys when q, Q or Ctrl-C is typed.
func readQuit(r io.Reader, keys chan<- struct{}) {
	b := make([]byte, 16)
	for {
		n, err := r.Read(b)
		for _, c := range b[:n] {
			if c == 'q' || c == 'Q' || c == 3 {
				close(keys)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func clip(s string, width int) string {
	if width <= 0 || len([]rune(s)) <= width {
		return s
	}
	return string([]rune(s)[:width])
}

// topLines renders a view as the table of weir top.
func topLines(v observe.View, addr string) []string {
	rate := pipelines.FormatRate
	lines := []string{fmt.Sprintf("weir top — %s — %s — rates over %.1fs  (q quits)", addr, v.Time.Local().Format("15:04:05"), v.Interval)}
	w := len("COMPONENT")
	cs := append([]observe.ComponentView(nil), v.Components...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Component.ID < cs[j].Component.ID })
	for _, c := range cs {
		w = max(w, len(c.Component.ID))
	}
	lines = append(lines, "", fmt.Sprintf("%-*s  %-11s %8s %8s %9s %9s %8s %7s %7s %6s  %s",
		w, "COMPONENT", "STATE", "IN/s", "OUT/s", "B-IN/s", "B-OUT/s", "LAG", "ERR/s", "ERRORS", "DLQ", "LAST ERROR"))
	for _, c := range cs {
		lastErr := ""
		if c.LastError != "" && c.State != "running" {
			lastErr = truncate(c.LastError, 100)
		}
		lines = append(lines, fmt.Sprintf("%-*s  %-11s %8s %8s %9s %9s %8s %7s %7s %6s  %s",
			w, c.Component.ID, c.State, rate(c.Rates.RecordsIn), rate(c.Rates.RecordsOut), rate(c.Rates.BytesIn), rate(c.Rates.BytesOut),
			rate(c.Lag), rate(c.Rates.Errors), rate(c.Errors), rate(c.DeadLetters), lastErr))
	}
	ew := len("EDGE")
	edge := func(e observe.EdgeView) string { return e.From + " → " + e.To }
	for _, e := range v.Edges {
		ew = max(ew, len([]rune(edge(e))))
	}
	lines = append(lines, "", fmt.Sprintf("%-*s %9s %10s %7s %6s", ew, "EDGE", "RECORDS/s", "RECORDS", "ERRORS", "DLQ"))
	for _, e := range v.Edges {
		shared := ""
		if e.Shared {
			shared = "  (component total)"
		}
		pad := ew - len([]rune(edge(e)))
		lines = append(lines, fmt.Sprintf("%s%s %9s %10s %7s %6s%s", edge(e), strings.Repeat(" ", pad),
			rate(e.RecordsPerSec), rate(e.Records), rate(e.Errors), rate(e.DeadLetters), shared))
	}
	return lines
}
