topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  parse_timestamp {
    field    = "time"
    timezone = "Mars/Olympus"
  }
}
