topic "logs" {}
topic "stats" {}

stream "stats" {
  from = [topic.logs]
  to   = topic.stats

  group_by = record.service
  count {}
  aggregate {
    initial = { n = 0 }
    add     = { n = agg.n + 1 }
  }
}
