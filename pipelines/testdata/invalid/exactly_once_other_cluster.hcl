broker {
  brokers = ["kafka-a:9092"]
}

topic "a" {}

sink "kafka" "mirror" {
  from         = [topic.a]
  topic        = "a-copy"
  brokers      = ["kafka-b:9092"]
  exactly_once = true
}

sink "kafka" "same" {
  from         = [topic.a]
  topic        = "a-copy2"
  brokers      = ["kafka-a:9092"]
  exactly_once = true
}
