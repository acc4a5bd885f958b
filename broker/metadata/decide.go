package metadata

// PartitionResult is the outcome of one partition's part of a request
// the controller decides per partition (ElectLeaders, reassignments):
// Outcome "" for success, else the name of Kafka's error code, with
// Kafka's message when there is one.
type PartitionResult[O ~string] struct {
	TopicPartition
	Outcome O      `json:"outcome,omitempty"`
	Message string `json:"message,omitempty"`
}

// decideEach decides items against im in order, each against the image
// after the records accepted before it, and returns the records and one
// result per item. one decides an item: its record (nil when nothing
// changes or on refusal) or its refusal. A record that does not apply
// (it cannot happen for one built against the image it applies to) is
// refused with applyFailed rather than written.
func decideEach[Q any, O ~string](im *Image, items []Q, tp func(Q) TopicPartition, one func(*Image, Q) (*Record, O, string), applyFailed O) ([]Record, []PartitionResult[O]) {
	var recs []Record
	results := make([]PartitionResult[O], 0, len(items))
	cur := im
	for _, it := range items {
		res := PartitionResult[O]{TopicPartition: tp(it)}
		r, outcome, msg := one(cur, it)
		res.Outcome, res.Message = outcome, msg
		if r != nil {
			next, err := cur.Apply(*r)
			if err != nil {
				res.Outcome, res.Message = applyFailed, err.Error()
			} else {
				cur = next
				recs = append(recs, *r)
			}
		}
		results = append(results, res)
	}
	return recs, results
}
