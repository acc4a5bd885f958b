package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"weir/pipelines/observe"
)

type tapFlags struct {
	admin     adminFlags
	limit     int
	rate      string
	direction string
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		f := &tapFlags{}
		cmd := &cobra.Command{
			Use:   "tap COMPONENT",
			Short: "Print a live sample of the records flowing out of (or into) a component of a running weir run",
			Long: `Print, one JSON object a line, the records flowing through a component of a
running weir run, decoded (Avro through the schema registry): where they are
(topic, partition, offset), key, timestamp and value. It asks the pipeline API
on weir run's admin listener (--admin-addr) and runs until Ctrl-C or --limit.

COMPONENT is an ID of the pipeline graph (source.NAME, stream.NAME,
sink.NAME) or a name only one component has; COMPONENT/N or COMPONENT/KIND
taps the N-th (or only KIND) transform step of a source or stream. The
default direction is out (the records a component emits), in for sinks.
Sampling is rate-limited (--rate): a busy pipeline is not slowed, records
beyond the rate are skipped and counted ("skipped").`,
			Example: `  weir tap source.app_logs
  weir tap slow_requests --limit 5
  weir tap stream.enrich/2 --direction in --rate 1/s`,
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return runTap(cmd, f, args[0])
			},
		}
		addAdminFlags(cmd, &f.admin)
		cmd.Flags().IntVar(&f.limit, "limit", 0, "stop after this many records (0: until Ctrl-C)")
		cmd.Flags().StringVar(&f.rate, "rate", "", fmt.Sprintf("most records a second, e.g. 5/s (default %d/s, at most %d/s)", observe.DefaultRate, observe.MaxRate))
		cmd.Flags().StringVar(&f.direction, "direction", "", "out (the records the component emits) or in (the records it receives); default out, in for sinks")
		return cmd
	})
}

func runTap(cmd *cobra.Command, f *tapFlags, component string) error {
	q := url.Values{}
	if f.limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (none) or more", f.limit)
	}
	if f.limit > 0 {
		q.Set("limit", strconv.Itoa(f.limit))
	}
	if f.rate != "" {
		if _, err := observe.ParseRate(f.rate); err != nil {
			return fmt.Errorf("--rate: %w", err)
		}
		q.Set("rate", f.rate)
	}
	if f.direction != "" {
		q.Set("direction", f.direction)
	}
	q.Set("format", "ndjson")
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := f.admin.client()
	if err != nil {
		return err
	}
	resp, err := cl.do(ctx, http.MethodGet, "/api/v1/tap/"+url.PathEscape(component), q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out := bufio.NewWriter(cmd.OutOrStdout())
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		if err := out.Flush(); err != nil {
			return nil // stdout closed (| head)
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("tap %s: %w", component, err)
	}
	if ctx.Err() == nil && f.limit == 0 {
		return fmt.Errorf("tap %s: weir run closed the stream (stopped?)", component)
	}
	return nil
}
