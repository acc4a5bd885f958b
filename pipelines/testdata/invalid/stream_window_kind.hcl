topic "logs" {}
topic "counts" {}

stream "per_minute" {
  from = [topic.logs]
  to   = topic.counts

  group_by = record.service
  window "tumbing" {
    size = "1m"
  }
  count {}
}
