topic "a" {}
topic "b" {}

stream "ab" {
  from = [topic.a]
  to   = topic.b
}

stream "ba" {
  from = [topic.b]
  to   = topic.a
}
