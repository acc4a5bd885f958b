// Package balancer maps the group partition-assignment strategy names of
// weir's configuration ("range", "roundrobin", "cooperative-sticky") to
// franz-go group balancers, for weir's own group consumers (connectors,
// streams, `weir consume --group`). Assignment is client-side in Kafka's
// group protocol: the broker only carries the chosen strategy's bytes.
package balancer
