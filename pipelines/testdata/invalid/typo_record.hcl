topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  filter {
    condition = recod.level != "debug"
  }
}
