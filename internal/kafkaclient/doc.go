// Package kafkaclient builds every Kafka client weir makes. A connector
// task, the schema registry's log, a streams application, a pipeline's
// producer, `weir produce|consume|topic|bench` and the test brokers'
// clients all call New with one Options value, so a setting that every
// client needs (seed brokers, client.id, the partitioner, the group
// balancer, timeouts, TLS and SASL) is added once, here.
//
//	kafkaclient.New(Options{Brokers: ..., Balancers: ...},
//	        kafkaclient.Producer(kafkaclient.AcksAll, kgo.NoCompression())...,
//	        kgo.ProducerLinger(5*time.Millisecond))
//
// What New always sets:
//   - the Java-compatible partitioner of package partition (explicit
//     partition, else murmur2 of the key, else sticky), so the same key
//     lands on the same partition from weir, the Java client and kcat;
//   - the group balancers named in Options (balancer package; "range" when
//     none), which only group consumers use.
//
// It also owns the parsing of the client settings the CLI and configs
// share (--brokers, --acks, --compression) and the producer options that
// go together (Producer: acks and idempotence, codec, auto-creation).
//
// Security (security.go): Options.Security is Kafka's security.protocol
// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) with a TLS side
// (internal/pemfile.Client: PEM trust store, PEM key store with an
// encrypted PKCS#8 key, server name, ssl.endpoint.identification.algorithm
// empty for no host name check, ssl.insecure.skip.verify for tests) and a
// SASL side (franz-go's pkg/sasl: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
// OAUTHBEARER with a static token or a token file read at each
// authentication, so a renewed token is used by the next connection).
//
// Client properties (properties.go): ParseProperties reads the settings
// with Kafka's client property names (security.protocol, sasl.mechanism,
// ssl.truststore.location, ssl.keystore.location, ssl.key.password,
// client.id, bootstrap.servers) plus sasl.username/sasl.password and
// sasl.oauthbearer.token(.file) instead of sasl.jaas.config (refused), and
// Confluent's schema.registry.url, schema.registry.ssl.* and
// basic.auth.user.info for the registry client (registry.go, built by
// internal/srclient; OpenRegistry opens one for an Avro connector from a
// URL and those properties, its schema_registry_config, and
// RegistryProperties picks them out of a client_config). JKS and PKCS12
// stores are refused (PEM only).
// ReadPropertiesFile reads a Java properties file: `weir ...
// --command-config FILE` and the broker block's client_config of a
// pipeline both end here. Secrets are Secret values (print as
// [redacted]); Sensitive and Redact name and hide them in property maps;
// errors name the property, never its value.
//
// End offsets (ends.go): ListEnds lists where a reader stops, and for a
// read_committed reader waits until no transaction is open below those
// ends; Retriable says which errors clear by themselves (Kafka's
// retriable codes, unreachable brokers). The connector runtime's
// position reads and streams' changelog restores both use them.
//
// Subpackages: partition (the partitioner, murmur2), balancer (strategy
// names to franz-go balancers).
package kafkaclient
