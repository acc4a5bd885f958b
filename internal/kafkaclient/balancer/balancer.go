package balancer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Names are the strategies weir accepts, in the order documented.
var Names = []string{"range", "roundrobin", "cooperative-sticky"}

// Default is the strategy used when none is configured.
const Default = "range"

// ErrUnknown is returned for a strategy name weir does not know.
var ErrUnknown = errors.New("unknown group balancer")

// For returns the franz-go balancer of a strategy name (case-insensitive;
// "round-robin" and "sticky-cooperative" spellings are not accepted, to
// keep configs greppable).
func For(name string) (kgo.GroupBalancer, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	}
	return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknown, name, strings.Join(Names, ", "))
}

// Opt returns the kgo option selecting the named strategies, in order of
// preference (the group picks the first every member supports).
func Opt(names ...string) (kgo.Opt, error) {
	if len(names) == 0 {
		names = []string{Default}
	}
	bs := make([]kgo.GroupBalancer, 0, len(names))
	for _, n := range names {
		b, err := For(n)
		if err != nil {
			return nil, err
		}
		bs = append(bs, b)
	}
	return kgo.Balancers(bs...), nil
}
