topic "a" {}
topic "b" {}

stream "s" {
  from     = [topic.a]
  to       = "b"
  balancer = "sticky"
}

sink "stdout" "out" {
  from     = [topic.b]
  balancer = "round-robin"
}
