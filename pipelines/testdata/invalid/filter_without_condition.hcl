topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  filter {
    conditon = true
  }
}
