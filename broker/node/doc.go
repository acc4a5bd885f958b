// Package node assembles one weir broker process from its parts: the
// cluster metadata (a file in the data directory for a single node, or a
// voter of the Raft controller quorum), the partition logs (in the data
// directory or the directories of Config.LogDir, Kafka's log.dirs) with
// the monitors of their directories (broker/logdir, whose states go out
// with the heartbeats), the Kafka
// listener with its producer-id store, the admin HTTP listener (/metrics,
// /healthz, /readyz) and the schema registry, both secured by
// broker/httpsec when configured (Config.AdminAddr https://..., the
// listener.name.admin.* broker configs, Config.RegistryConfigs with
// Confluent Schema Registry's names).
//
// `weir broker`, the broker `weir run` embeds, and the in-process test
// broker (broker/brokertest/testbroker) all start through Start, so they
// are the same server wired the same way; only the addresses and which
// listeners are on differ. Start returns once every listener is bound (a
// bad address fails it); Shutdown stops the parts in reverse order, with a
// controlled shutdown (leaderships handed over) first in a cluster.
//
// Listeners (listeners.go): the Kafka listeners come from Kafka's broker
// configs listeners, advertised.listeners, listener.security.protocol.map,
// inter.broker.listener.name (or security.inter.broker.protocol) and
// controller.listener.names, validated by broker/listener; SSL listeners
// get their key and trust stores from the ssl.* configs (broker/tlsconf),
// whose files are polled for changes every Config.TLSReloadInterval;
// SASL_PLAINTEXT and SASL_SSL listeners get their mechanisms from the
// sasl.* configs (broker/sasl, sasl.go here), SCRAM credentials from the
// metadata, and Config.AddScram (weir broker --add-scram) is stored when
// the data directory is new.
// Config.KafkaAddr and AdvertisedAddr (--kafka-addr,
// --advertised-kafka-addr) are a shorthand for
// listeners=PLAINTEXT://KafkaAddr and may not be combined with listeners.
// In a cluster the listener named in controller.listener.names is the
// controller (Raft) address. Either it or the inter-broker listener may
// be SSL: an SSL controller listener puts Raft and the controller RPC
// under TLS (broker/controller tls.go), an SSL inter-broker listener puts
// follower fetches under TLS (broker/replica), each with that listener's
// ssl.* settings (listener.name.<name>.ssl.* overrides) on both sides of
// the connection, and a warning at start when ssl.client.auth is not
// required; SASL on them is refused. With an authorizer
// (authorizer.class.name) the SSL controller listener takes only the
// super.users' certificates. KafkaAddr returns the first PLAINTEXT
// listener (the schema registry and weir's own clients connect there; the
// registry is off, with a warning, when there is none), ListenerAddrs
// every bound address by listener name.
package node
