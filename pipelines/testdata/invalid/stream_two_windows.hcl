topic "logs" {}
topic "counts" {}

stream "per_minute" {
  from = [topic.logs]
  to   = topic.counts

  group_by = record.service
  window "tumbling" {
    size = "1m"
    gap  = "30s"
  }
  window "session" {
    gap = "30s"
  }
  count {}
}
