// Package kafkacompat holds the Kafka checks that use software nobody here wrote: the
// differential test (the same franz-go scenarios against a real Apache Kafka broker and
// against the gateway, compared), the Java client, librdkafka (confluent-kafka) and
// Kafka Connect standalone through the gateway. Everything is in its tests; scenarios
// that need a gateway feature skip, naming it, only while the gateway's ApiVersions
// does not advertise it.
package kafkacompat
