package controller

import (
	"context"

	"weir/broker/metadata"
)

// KindAlterReassignments starts, changes or cancels partition
// reassignments (Kafka's AlterPartitionReassignments), decided by the
// leader in one entry (metadata.BuildReassignments). The reassignment
// lives in the partitions' metadata (AddingReplicas, RemovingReplicas),
// so it survives a change of controller: the new leader completes it at
// the partition leader's next ISR change like the old one would have.
const KindAlterReassignments = "alter_reassignments"

// AlterPartitionReassignments asks the controller to reassign partitions;
// see metadata.Reassigner.
func (n *Node) AlterPartitionReassignments(ctx context.Context, reqs []metadata.Reassignment) ([]metadata.ReassignResult, error) {
	reply, err := n.command(ctx, Command{Kind: KindAlterReassignments, Reassign: reqs})
	if err != nil {
		return nil, err
	}
	return reply.Reassignments, nil
}

var _ metadata.Reassigner = (*Node)(nil)

// planReassignments decides a reassignment command with the topics'
// unclean.leader.election.enable (a cancel may need it).
func (l *leader) planReassignments(im *metadata.Image, c Command) ([]metadata.Record, []metadata.ReassignResult) {
	return metadata.BuildReassignments(im, c.Reassign, l.unclean)
}
