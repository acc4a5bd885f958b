topic "logs" {}
topic "sessions" {}

stream "sessions" {
  from     = [topic.logs]
  to       = topic.sessions
  group_by = record.user
  window "session" {
    gap = "30m"
  }
  aggregate {
    initial = { clicks = 0 }
    add     = { clicks = agg.clicks + 1 }
  }
}

stream "minutes" {
  from     = [topic.logs]
  to       = topic.sessions
  group_by = record.user
  window "tumbling" {
    size = "1m"
  }
  aggregate {
    initial = { clicks = 0 }
    add     = { clicks = agg.clicks + 1 }
    merge   = { clicks = agg.clicks + other.clicks }
  }
}
