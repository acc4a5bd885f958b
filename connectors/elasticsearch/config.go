package elasticsearch

import (
	"errors"
	"fmt"
	"time"

	"weir/connectors"
)

// Config is the sink's decoded configuration. Build it with FromConfig
// (from a connector block decoded through Spec) or fill it in Go and call
// Validate.
type Config struct {
	// URLs of the cluster's HTTP endpoints.
	URLs []string
	// Index is the index name template (see the package doc).
	Index string
	// DataStream writes with the create op and adds @timestamp (event
	// time) to documents that lack it.
	DataStream bool
	// Action is "index" (default) or "create".
	Action string

	// IDFrom is where _id comes from: "key" (the record key; records
	// without one get an id from the server), "field" (IDField), "offset"
	// (topic+partition+offset of the record, Kafka Connect's key.ignore
	// form: one document per record however often it is re-delivered)
	// or "none".
	IDFrom  string
	IDField string
	// TimestampField is the document field holding the event time (RFC
	// 3339 string or epoch milliseconds); "" uses the record timestamp.
	TimestampField string

	// VersionType is "" (no external versioning), "external" or
	// "external_gte"; the version comes from VersionField in the document
	// or, for tombstones and documents without the field, VersionHeader.
	VersionType   string
	VersionField  string
	VersionHeader string

	// CDC maps change-data-capture envelopes to documents (cdc.go): _id
	// from the primary-key record key, the after image as the document,
	// op d and tombstones as deletes, external versions from the
	// weir.cdc.version header by default. CDCMetadataField, when set,
	// names a document field for the change's op and source position.
	CDC              bool
	CDCMetadataField string

	// ValueFormat is "auto" (Confluent-framed Avro when the value starts
	// with the magic byte 0, else JSON), "json" or "avro".
	ValueFormat       string
	SchemaRegistryURL string
	// SchemaRegistryConfig is the registry client settings
	// (schema_registry_config; kafkaclient.OpenRegistry).
	SchemaRegistryConfig map[string]string

	// Bulk sizing and concurrency.
	Workers       int           // concurrent bulk requests
	BulkMaxBytes  int           // bytes per bulk request
	BulkMaxDocs   int           // documents buffered before the sink waits for them
	FlushInterval time.Duration // background flush of partly filled bulks
	Compress      bool          // gzip request bodies
	Timeout       time.Duration // per bulk request
	Pipeline      string        // ingest pipeline

	// Per-item retries of retryable rejections (429, es_rejected_execution,
	// 5xx); after MaxRetries the item goes to the dead-letter topic.
	MaxRetries   int
	RetryInitial time.Duration
	RetryMax     time.Duration

	// Authentication and TLS.
	Username           string
	Password           string
	APIKey             string
	CAFile             string
	InsecureSkipVerify bool
	// Client certificate (mutual TLS): CertFile holds the chain and, when
	// KeyFile is empty, the key; KeyPassword decrypts an encrypted
	// PKCS#8 key. ServerName is the name the server's certificate must
	// carry ("": the URL's host).
	CertFile, KeyFile string
	KeyPassword       string
	ServerName        string
}

// Defaults returns a Config with every default filled in.
func Defaults() Config {
	return Config{
		Action:        "index",
		IDFrom:        "key",
		ValueFormat:   "auto",
		Workers:       2,
		BulkMaxBytes:  5 << 20,
		BulkMaxDocs:   10000,
		FlushInterval: time.Second,
		Timeout:       time.Minute,
		MaxRetries:    10,
		RetryInitial:  100 * time.Millisecond,
		RetryMax:      30 * time.Second,
	}
}

// Spec declares the sink's settings for the connector registry.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "urls", Type: connectors.StringList, Required: true, Doc: "HTTP endpoints of the cluster, e.g. [\"http://127.0.0.1:9200\"]"},
		{Name: "index", Type: connectors.String, Required: true, Doc: "index name template: literal text, %{[field][sub]} from the document, %{+2006.01.02} event time (Go layout, UTC), %{[@metadata][topic|partition|key]}"},
		{Name: "data_stream", Type: connectors.Bool, Default: false, Doc: "write to a data stream: create op, @timestamp added from the event time when missing"},
		{Name: "action", Type: connectors.String, Default: "index", Enum: []string{"index", "create"}, Doc: "bulk op for records with a value (tombstones are always delete)"},
		{Name: "id_from", Type: connectors.String, Default: "key", Enum: []string{"key", "field", "offset", "none"}, Doc: "where _id comes from: the record key, the id_field of the document, the record's topic+partition+offset, or the server"},
		{Name: "id_field", Type: connectors.String, Doc: "document field holding _id when id_from = \"field\" (a.b or [a][b])"},
		{Name: "timestamp_field", Type: connectors.String, Doc: "document field with the event time (RFC 3339 or epoch ms); empty: the record timestamp"},
		{Name: "version_type", Type: connectors.String, Default: "", Enum: []string{"", "external", "external_gte"}, Doc: "external versioning: an older version never overwrites a newer one"},
		{Name: "version_field", Type: connectors.String, Doc: "document field holding the version (integer)"},
		{Name: "version_header", Type: connectors.String, Doc: "record header holding the version (decimal text); used for tombstones and documents without version_field"},
		{Name: "cdc", Type: connectors.Bool, Default: false, Doc: "CDC envelopes (connectors/mysql): _id from the primary key, document = the after image, op d and tombstones delete, version_type external from the weir.cdc.version header unless set"},
		{Name: "cdc_metadata_field", Type: connectors.String, Doc: "with cdc: document field that gets the change's op, ts_ms and source ts_ms/file/pos/gtid"},
		{Name: "value_format", Type: connectors.String, Default: "auto", Enum: []string{"auto", "json", "avro"}, Doc: "auto: Confluent-framed Avro when the value starts with byte 0, else JSON"},
		{Name: "schema_registry_url", Type: connectors.String, Doc: "schema registry for Avro values (weir's or Confluent's)"},
		connectors.RegistryConfigField,
		{Name: "workers", Type: connectors.Int, Default: 2, Doc: "concurrent bulk requests"},
		{Name: "bulk_max_bytes", Type: connectors.Size, Default: "5MiB", Doc: "bytes per bulk request"},
		{Name: "bulk_max_docs", Type: connectors.Int, Default: 10000, Doc: "documents buffered before the sink waits for their bulk results"},
		{Name: "flush_interval", Type: connectors.Duration, Default: "1s", Doc: "send partly filled bulks after this long"},
		{Name: "compress", Type: connectors.Bool, Default: false, Doc: "gzip bulk request bodies"},
		{Name: "timeout", Type: connectors.Duration, Default: "1m", Doc: "timeout of one bulk request"},
		{Name: "pipeline", Type: connectors.String, Doc: "ingest pipeline to run documents through"},
		{Name: "max_retries", Type: connectors.Int, Default: 10, Doc: "retries of a retryable item (429, es_rejected_execution_exception, 5xx) before it is dead-lettered"},
		{Name: "retry_initial", Type: connectors.Duration, Default: "100ms", Doc: "first retry delay (doubles, with jitter)"},
		{Name: "retry_max", Type: connectors.Duration, Default: "30s", Doc: "largest retry delay"},
		{Name: "username", Type: connectors.String, Doc: "basic auth user"},
		{Name: "password", Type: connectors.String, Sensitive: true, Doc: "basic auth password"},
		{Name: "api_key", Type: connectors.String, Sensitive: true, Doc: "API key (base64 id:key), sent as Authorization: ApiKey"},
		{Name: "ca_file", Type: connectors.String, Doc: "PEM file of the CAs that sign the server's certificate"},
		{Name: "cert_file", Type: connectors.String, Doc: "PEM client certificate chain for mutual TLS (and its key, when key_file is empty)"},
		{Name: "key_file", Type: connectors.String, Doc: "PEM private key of cert_file"},
		{Name: "key_password", Type: connectors.String, Sensitive: true, Doc: "password of an encrypted key (PKCS#8)"},
		{Name: "server_name", Type: connectors.String, Doc: "name the server's certificate must carry (default: the URL's host)"},
		{Name: "insecure_skip_verify", Type: connectors.Bool, Default: false, Doc: "do not verify the server's certificate (tests only)"},
	},
	Validate: func(c connectors.Config) error { _, err := FromConfig(c); return err },
}

// FromConfig converts a config decoded by Spec into a validated Config.
func FromConfig(c connectors.Config) (Config, error) {
	cfg := Defaults()
	cfg.URLs = c.Strings("urls")
	cfg.Index = c.String("index")
	cfg.DataStream = c.Bool("data_stream")
	if c.Has("action") {
		cfg.Action = c.String("action")
	}
	if c.Has("id_from") {
		cfg.IDFrom = c.String("id_from")
	}
	cfg.IDField = c.String("id_field")
	cfg.TimestampField = c.String("timestamp_field")
	cfg.VersionType = c.String("version_type")
	cfg.VersionField = c.String("version_field")
	cfg.VersionHeader = c.String("version_header")
	cfg.CDC = c.Bool("cdc")
	cfg.CDCMetadataField = c.String("cdc_metadata_field")
	if c.Has("value_format") {
		cfg.ValueFormat = c.String("value_format")
	}
	cfg.SchemaRegistryURL = c.String("schema_registry_url")
	cfg.SchemaRegistryConfig = c.StringMap(connectors.RegistryConfigSetting)
	if c.Has("workers") {
		cfg.Workers = int(c.Int("workers"))
	}
	if c.Has("bulk_max_bytes") {
		cfg.BulkMaxBytes = int(c.Int("bulk_max_bytes"))
	}
	if c.Has("bulk_max_docs") {
		cfg.BulkMaxDocs = int(c.Int("bulk_max_docs"))
	}
	if c.Has("flush_interval") {
		cfg.FlushInterval = c.Duration("flush_interval")
	}
	cfg.Compress = c.Bool("compress")
	if c.Has("timeout") {
		cfg.Timeout = c.Duration("timeout")
	}
	cfg.Pipeline = c.String("pipeline")
	if c.Has("max_retries") {
		cfg.MaxRetries = int(c.Int("max_retries"))
	}
	if c.Has("retry_initial") {
		cfg.RetryInitial = c.Duration("retry_initial")
	}
	if c.Has("retry_max") {
		cfg.RetryMax = c.Duration("retry_max")
	}
	cfg.Username = c.String("username")
	cfg.Password = c.String("password")
	cfg.APIKey = c.String("api_key")
	cfg.CAFile = c.String("ca_file")
	cfg.InsecureSkipVerify = c.Bool("insecure_skip_verify")
	cfg.CertFile, cfg.KeyFile = c.String("cert_file"), c.String("key_file")
	cfg.KeyPassword, cfg.ServerName = c.String("key_password"), c.String("server_name")
	return cfg, cfg.Validate()
}

// Validate checks cross-field rules; errors name the settings.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.URLs) == 0 {
		bad("urls: at least one URL is required")
	}
	if c.Index == "" {
		bad("index: required")
	} else if _, err := ParseTemplate(c.Index); err != nil {
		bad("index: %w", err)
	}
	switch c.Action {
	case "index", "create":
	default:
		bad("action: %q is not index or create", c.Action)
	}
	switch c.IDFrom {
	case "key", "offset", "none":
		if c.IDField != "" {
			bad("id_field is set but id_from is %q (set id_from = \"field\")", c.IDFrom)
		}
	case "field":
		if c.IDField == "" {
			bad("id_from = \"field\" needs id_field")
		}
	default:
		bad("id_from: %q is not key, field, offset or none", c.IDFrom)
	}
	for name, p := range map[string]string{"id_field": c.IDField, "timestamp_field": c.TimestampField, "version_field": c.VersionField} {
		if p != "" {
			if _, err := parsePath(p); err != nil {
				bad("%s: %w", name, err)
			}
		}
	}
	c.validateCDC(bad)
	switch c.VersionType {
	case "":
		if c.VersionField != "" || c.VersionHeader != "" {
			bad("version_field/version_header are set but version_type is empty (set it to external)")
		}
	case "external", "external_gte":
		if c.VersionField == "" && c.VersionHeader == "" {
			bad("version_type = %q needs version_field or version_header", c.VersionType)
		}
		if c.IDFrom == "none" {
			bad("version_type = %q needs a document id (id_from = key or field)", c.VersionType)
		}
	default:
		bad("version_type: %q is not external or external_gte", c.VersionType)
	}
	if c.DataStream && c.Action == "index" {
		c.Action = "create" // data streams only accept create
	}
	switch c.ValueFormat {
	case "auto", "json":
	case "avro":
		if c.SchemaRegistryURL == "" {
			bad("value_format = \"avro\" needs schema_registry_url")
		}
	default:
		bad("value_format: %q is not auto, json or avro", c.ValueFormat)
	}
	if c.Workers < 1 || c.Workers > 64 {
		bad("workers: %d is not in 1..64", c.Workers)
	}
	if c.BulkMaxBytes < 1024 {
		bad("bulk_max_bytes: %d is below 1KiB", c.BulkMaxBytes)
	}
	if c.BulkMaxDocs < 1 {
		bad("bulk_max_docs: must be at least 1")
	}
	if c.FlushInterval <= 0 {
		bad("flush_interval: must be positive")
	}
	if c.MaxRetries < 0 {
		bad("max_retries: must not be negative")
	}
	if c.APIKey != "" && (c.Username != "" || c.Password != "") {
		bad("api_key and username/password are both set: choose one")
	}
	if (c.Username == "") != (c.Password == "") {
		bad("username and password must be set together")
	}
	return errors.Join(errs...)
}
