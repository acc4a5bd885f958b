topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  set {
    level = uper(record.level)
  }
}
