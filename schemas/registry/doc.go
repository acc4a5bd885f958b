// Package registry is weir's schema registry: Confluent Schema Registry's
// REST API (subjects, versions, ids, lookup, compatibility, config, mode,
// soft and permanent deletes, Confluent's error codes and JSON shapes),
// so every Confluent serializer and franz-go's pkg/sr work unchanged.
//
// State lives in a Log: in production a one-partition compacted topic
// (_schemas) written and read with franz-go over the Kafka protocol, so
// the registry runs against weir's broker or Apache Kafka alike. Every
// instance consumes the whole topic into memory (state.go) and serves
// reads from it; a write is serialized in its instance, appended with
// acks=all, and answered only once that instance has read its own record
// back. A restarted instance rebuilds the same state, with the same ids,
// from the topic. Ids are allocated as max id + 1 by the writer, and the
// same schema (by schemas.Schema.Identity) gets the same id in every
// subject.
//
// Files: records.go (the topic's keys and values), state.go (the state
// machine), log.go (Log, MemLog, KafkaLog), registry.go (Registry, the
// write path), http.go (the REST API), errors.go (Confluent error codes),
// source.go (a schemas.Source over franz-go's sr client), access.go
// (IsWrite: which requests a read-only user may not make; TLS and basic
// auth are broker/httpsec's, wrapped around Handler by broker/node).
//
// Not supported: schema references, PROTOBUF and JSON schema types,
// contexts, and several writing instances on one topic (ids could clash).
package registry
