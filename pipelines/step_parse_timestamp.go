package pipelines

import (
	"fmt"
	"strings"
	"time"

	"weir/connectors"
	"weir/pipelines/expr"
)

func init() {
	RegisterStep(&StepKind{
		Name: "parse_timestamp",
		Doc:  "Parses a field holding a time (text in a layout, or a number of seconds, milliseconds, microseconds or nanoseconds since the epoch) into a timestamp, and by default makes it the record's time (windows use it).",
		Spec: connectors.Spec{Fields: []connectors.Field{
			{Name: "field", Type: connectors.String, Required: true, Doc: "the field holding the time"},
			{Name: "layout", Type: connectors.String, Default: "rfc3339", Doc: "a named layout (rfc3339, rfc3339nano, rfc1123, rfc1123z, rfc822, rfc822z, ansic, unixdate, kitchen, stamp, stampmilli, datetime, common_log; unix, unix_ms, unix_us, unix_ns for numbers) or a Go reference-time layout like \"2006-01-02 15:04:05\""},
			{Name: "target", Type: connectors.String, Doc: "the field to put the timestamp in; unset, field itself"},
			{Name: "timezone", Type: connectors.String, Doc: "the IANA time zone of times whose text has no offset (\"Europe/Paris\"); unset, UTC"},
			{Name: "set_record_time", Type: connectors.Bool, Default: true, Doc: "make the parsed time the record's timestamp"},
			OnError,
		}},
		New: newParseTimestamp,
	})
}

func newParseTimestamp(a *StepArgs) Step {
	s := &parseTimestampStep{field: a.String("field"), setTime: true, loc: time.UTC}
	s.target = s.field
	if _, ok := a.Attr("target"); ok {
		s.target = a.String("target")
	}
	layout := a.String("layout")
	if nl, ok := namedLayouts[strings.ToLower(layout)]; ok {
		layout = nl
	}
	s.layout = layout
	if at, ok := a.Attr("layout"); ok && !strings.HasPrefix(layout, "unix") && !strings.ContainsAny(layout, "0123456789") {
		a.Error(at.Expr.Range(), "Invalid timestamp layout",
			fmt.Sprintf("%q is neither a named layout (rfc3339, unix, unix_ms, unix_us, unix_ns, common_log, ...) nor a Go reference-time layout like \"2006-01-02 15:04:05\".", layout))
	}
	if at, ok := a.Attr("timezone"); ok {
		if tz, ok := a.StringOf(at); ok {
			loc, err := time.LoadLocation(tz)
			if err != nil {
				a.Error(at.Expr.Range(), "Unknown time zone", fmt.Sprintf("%q: %v.", tz, err))
			} else {
				s.loc = loc
			}
		}
	}
	s.setTime = a.Bool("set_record_time")
	return s
}

type parseTimestampStep struct {
	field, target string
	layout        string // Go layout, or unix, unix_ms, unix_us, unix_ns
	loc           *time.Location
	setTime       bool
}

var namedLayouts = map[string]string{
	"rfc3339":     time.RFC3339Nano,
	"rfc3339nano": time.RFC3339Nano,
	"rfc1123":     time.RFC1123,
	"rfc1123z":    time.RFC1123Z,
	"rfc822":      time.RFC822,
	"rfc822z":     time.RFC822Z,
	"ansic":       time.ANSIC,
	"unixdate":    time.UnixDate,
	"kitchen":     time.Kitchen,
	"stamp":       time.Stamp,
	"stampmilli":  time.StampMilli,
	"datetime":    time.DateTime,
	"common_log":  "02/Jan/2006:15:04:05 -0700",
}

func (s *parseTimestampStep) Apply(ev *Event) (bool, error) {
	v, ok := ev.Fields.Get(s.field)
	if !ok || v == nil {
		return true, fmt.Errorf("field %q is missing", s.field)
	}
	var t time.Time
	if strings.HasPrefix(s.layout, "unix") {
		n, err := expr.ToNumber(v)
		if err != nil {
			return true, fmt.Errorf("field %q: %w", s.field, err)
		}
		f, _ := expr.ToFloat(n)
		switch s.layout {
		case "unix":
			t = time.Unix(0, int64(f*1e9))
		case "unix_ms":
			t = time.UnixMilli(int64(f))
		case "unix_us":
			t = time.UnixMicro(int64(f))
		default:
			t = time.Unix(0, int64(f))
		}
	} else {
		str, err := expr.ToString(v)
		if err != nil {
			return true, fmt.Errorf("field %q: %w", s.field, err)
		}
		if t, err = time.ParseInLocation(s.layout, str, s.loc); err != nil {
			return true, fmt.Errorf("field %q: %q does not match layout %q", s.field, str, s.layout)
		}
	}
	ev.Fields.Set(s.target, t)
	if s.setTime {
		ev.Time = t
	}
	return true, nil
}
