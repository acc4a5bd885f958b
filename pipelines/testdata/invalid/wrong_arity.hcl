topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  set {
    level = lower(record.level, "x")
  }
}
