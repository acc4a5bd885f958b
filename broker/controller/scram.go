package controller

import (
	"context"
	"fmt"

	"weir/broker/metadata"
)

// KindAlterScram changes SCRAM credentials (AlterUserScramCredentials).
const KindAlterScram = "alter_scram"

func init() { wireErrors["unknown_scram_credential"] = metadata.ErrUnknownScramCredential }

// planScram turns the credential changes of a command into records,
// checked in order against im (a removal needs the credential).
func planScram(im *metadata.Image, changes []metadata.UserScramCredential) ([]metadata.Record, error) {
	var rs []metadata.Record
	cur := im
	for _, c := range changes {
		c := c
		r := metadata.Record{Type: metadata.TypeUserScramCredential, UserScramCredential: &c}
		next, err := cur.Apply(r)
		if err != nil {
			return nil, err
		}
		cur = next
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("controller: %s without changes", KindAlterScram)
	}
	return rs, nil
}

// AlterScramCredentials changes SCRAM credentials through the leader;
// see metadata.ScramAlterer.
func (n *Node) AlterScramCredentials(ctx context.Context, changes []metadata.UserScramCredential) error {
	_, err := n.command(ctx, Command{Kind: KindAlterScram, Scram: changes})
	return err
}
