package main

import (
	"fmt"
	"strings"

	"go.uber.org/zap"

	"weir/pipelines"
)

// recordSummary describes, per component, the records in and out since the
// start and where they went: "59 in, 59 out to out/app_logs.jsonl".
func recordSummary(cfg *pipelines.Config, sts []pipelines.Status) map[string]string {
	where := map[string]string{}
	for _, s := range cfg.Sources {
		where[s.ID()] = "topic " + s.Topic
	}
	for _, s := range cfg.Streams {
		where[s.ID()] = "topic " + s.To
	}
	for _, s := range cfg.Sinks {
		switch p, _ := s.Raw["path"].(string); {
		case s.Kind == "stdout":
			where[s.ID()] = "stdout"
		case p != "":
			where[s.ID()] = p
		default:
			where[s.ID()] = s.Kind
		}
	}
	out := make(map[string]string, len(sts))
	for _, st := range sts {
		var b strings.Builder
		if !strings.HasPrefix(st.ID, "source.") {
			fmt.Fprintf(&b, "%.0f in, ", st.RecordsIn)
		}
		fmt.Fprintf(&b, "%.0f out", st.RecordsOut)
		if w := where[st.ID]; w != "" {
			b.WriteString(" to " + w)
		}
		if st.Errors > 0 {
			fmt.Fprintf(&b, ", %.0f errors", st.Errors)
		}
		out[st.ID] = b.String()
	}
	return out
}

// logSummary logs the summary as one info line; it returns the summary so
// the periodic caller can skip an unchanged one.
func logSummary(lg *zap.Logger, msg string, cfg *pipelines.Config, sts []pipelines.Status, prev map[string]string) map[string]string {
	sum := recordSummary(cfg, sts)
	if prev != nil && fmt.Sprint(sum) == fmt.Sprint(prev) {
		return sum
	}
	lg.Info(msg, zap.Any("records", sum))
	return sum
}
