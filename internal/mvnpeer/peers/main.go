// Command peers builds every Maven test peer's launcher (or copies it
// from mvnpeer's cache): scripts/test runs it before the tests, so that
// no test waits on Maven. Without java or mvn it says which tests will be
// skipped (or fail under CI) and exits 0.
package main

import (
	"fmt"
	"os"
	"os/exec"

	"weir/broker/brokertest/eostest"
	"weir/broker/brokertest/kafkatools"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/debeziumtest"
	"weir/internal/kafkapeer"
)

func main() {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "mvnpeer/peers: %s missing: the tests with Java peers (search servers, Debezium, Kafka's tools, client and broker) will be skipped (fail under CI)\n", tool)
			return
		}
	}
	peers := []struct {
		name  string
		build func() (string, error)
	}{
		{"search server Elasticsearch 7", func() (string, error) { return searchtest.Build(searchtest.Elasticsearch7) }},
		{"search server Elasticsearch 8", func() (string, error) { return searchtest.Build(searchtest.Elasticsearch8) }},
		{"search server OpenSearch 2", func() (string, error) { return searchtest.Build(searchtest.OpenSearch2) }},
		{"Debezium embedded engine", debeziumtest.Build},
		{"Apache Kafka tools", kafkatools.Build},
		{"Apache Kafka client and Kafka Streams", eostest.Classpath},
		{"Apache Kafka broker", kafkapeer.Build},
	}
	failed := false
	for _, p := range peers {
		if _, err := p.build(); err != nil {
			fmt.Fprintf(os.Stderr, "mvnpeer/peers: %s: %v\n", p.name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
