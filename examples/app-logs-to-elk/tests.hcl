# Unit tests of the source's transforms: `weir test examples/app-logs-to-elk`
# runs them without a broker or Elasticsearch (weir run ignores test blocks).

test "a JSON log line is parsed, renamed and timed" {
  target = source.app_logs
  input {
    value = "{\"ts\":\"2024-05-01T10:00:00.473Z\",\"lvl\":\"INFO\",\"svc\":\"search\",\"msg\":\"GET /v1/search/24 -> 201\",\"trace\":\"830c71c2cdcc6929\",\"status\":201,\"took\":143.5}"
  }
  output {
    topic = topic.app_logs
    value = {
      time        = "2024-05-01T10:00:00.473Z"
      level       = "info"
      service     = "search"
      msg         = "GET /v1/search/24 -> 201"
      trace_id    = "830c71c2cdcc6929"
      status      = 201
      duration_ms = 143.5
      host        = ""
      file        = ""
    }
  }
}

test "a line without a level counts as info" {
  target = source.app_logs
  input {
    value = "{\"ts\":\"2024-05-01T10:00:01Z\",\"svc\":\"api\",\"msg\":\"Grüße aus Köln → 東京\"}"
  }
  output {
    fields = { level = "info", msg = "Grüße aus Köln → 東京" }
  }
}

test "debug lines are dropped" {
  target = source.app_logs
  input {
    value = "{\"ts\":\"2024-05-01T10:00:01.831Z\",\"lvl\":\"debug\",\"svc\":\"search\",\"msg\":\"cache\"}"
  }
  no_output = true
}

test "a line without a time cannot be stored and is dead-lettered" {
  target = source.app_logs
  input {
    value = "{\"lvl\":\"info\",\"svc\":\"api\",\"msg\":\"no ts\"}"
  }
  output {
    dead_letter = true
    error       = "time"
  }
}
