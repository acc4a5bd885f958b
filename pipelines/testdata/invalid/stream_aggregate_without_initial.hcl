topic "logs" {}
topic "stats" {}

stream "stats" {
  from = [topic.logs]
  to   = topic.stats

  group_by = record.service
  aggregate {
    add = { n = agg.n + 1 }
  }
}
