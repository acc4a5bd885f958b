topic "a" {}

sink "stdout" "out" {
  from = topic.a
}

stream "out" {
  from = [topic.a]
  to   = "b"
}
