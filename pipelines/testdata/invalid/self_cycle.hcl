topic "a" {}

stream "loop" {
  from = [topic.a]
  to   = topic.a
}
