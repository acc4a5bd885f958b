topic "logs" {}
topic "by_service" {}

stream "rekey" {
  from     = [topic.logs]
  to       = topic.by_service
  group_by = record.service
}

stream "windowed" {
  from = [topic.logs]
  to   = topic.by_service
  window "tumbling" {
    size = "1m"
  }
}

stream "both" {
  from       = [topic.logs]
  to         = topic.by_service
  select_key = record.service
  group_by   = record.service
  count {}
}
