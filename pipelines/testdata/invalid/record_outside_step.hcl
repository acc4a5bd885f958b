topic "a" {
  name = record.topic
}
