topic "logs" {}
topic "counts" {}
topic "other" {}

stream "counts" {
  from     = [topic.logs]
  to       = topic.counts
  group_by = record.service
  parse_timestamp {
    field = "time"
  }
  route {
    topic     = topic.other
    condition = record.level == "debug"
  }
  window "tumbling" {
    size = "1m"
  }
  count {}
  filter {
    condition = record.count > 10
  }
}
