topic "a" {}

sink "kafka" "copy" {
  from  = [topic.a]
  topic = topic.a
}
