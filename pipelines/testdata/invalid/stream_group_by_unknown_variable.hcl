topic "logs" {}
topic "stats" {}

stream "a" {
  from     = [topic.logs]
  to       = topic.stats
  group_by = value.service
  count {}
}

stream "b" {
  from     = [topic.logs]
  to       = topic.stats
  group_by = agg.service
  aggregate {
    initial = { n = record.n }
    add     = { n = agg.n + recrd.n }
  }
}
