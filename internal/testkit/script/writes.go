package script

// Writes is a script's stand-in for the log a state machine appends to
// (the coordinators' Write jobs, W): each write it is given completes at
// once, or is held until release-writes, and fails while failures are
// injected. Its commands:
//
//	fail-writes n=N    the next N writes fail
//	hold-writes        keep writes pending until release-writes
//	release-writes     complete the held writes, in order
type Writes[W any] struct {
	// Complete completes one write: failed when it is an injected
	// failure (it logs the write otherwise).
	Complete func(w W, failed bool)

	fail    int
	hold    bool
	pending []W
}

// Add completes w, or holds it while writes are held.
func (q *Writes[W]) Add(w W) {
	if q.hold {
		q.pending = append(q.pending, w)
		return
	}
	q.complete(w)
}

func (q *Writes[W]) complete(w W) {
	failed := q.fail > 0
	if failed {
		q.fail--
	}
	q.Complete(w, failed)
}

// Command runs cmd if it is one of the Writes commands, and reports
// whether it was.
func (q *Writes[W]) Command(cmd string, a Args) bool {
	switch cmd {
	case "fail-writes":
		q.fail = int(a.Int("n", 1))
	case "hold-writes":
		q.hold = true
	case "release-writes":
		q.hold = false
		held := q.pending
		q.pending = nil
		for _, w := range held {
			q.complete(w)
		}
	default:
		return false
	}
	return true
}
