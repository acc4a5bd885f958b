package stdout

import (
	"io"
	"os"
	"sync"

	"weir/connectors"
	"weir/connectors/filesink"
)

// Spec is the declared configuration of the "stdout" sink kind.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "format", Type: connectors.String, Default: filesink.FormatJSON, Enum: filesink.Formats, Doc: "json: one JSON value per line (Avro decoded); raw: value bytes; envelope: JSON with topic, partition, offset, key, timestamp and value."},
		{Name: "schema_registry", Type: connectors.String, Doc: "Schema registry URL, to decode Avro values (weir run fills in its own)."},
		connectors.RegistryConfigField,
	},
}

// Output is where stdout sinks write (tests replace it). Writes to it
// are serialized.
var Output io.Writer = os.Stdout

var outMu sync.Mutex

type lockedWriter struct{}

func (lockedWriter) Write(b []byte) (int, error) {
	outMu.Lock()
	defer outMu.Unlock()
	return Output.Write(b)
}

func init() {
	connectors.Default.Register(&connectors.Kind{
		Name: "stdout",
		Doc:  "Prints the records of its topics on standard output, one line each.",
		Spec: Spec,
		NewSink: func(name string, cfg connectors.Config) (connectors.Sink, error) {
			return filesink.New(filesink.Options{Format: cfg.String("format"),
				SchemaRegistry: cfg.String("schema_registry"), RegistryConfig: cfg.StringMap(connectors.RegistryConfigSetting), Out: lockedWriter{}})
		},
	})
}
