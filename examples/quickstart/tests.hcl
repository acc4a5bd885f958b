# Unit tests of the quickstart's transforms: `weir test examples/quickstart`
# runs them without a broker (weir run ignores test blocks).

test "a log line is parsed" {
  target = source.app
  input {
    value = "2024-05-01T10:00:00.120Z INFO  [checkout] order placed user=alice duration=35ms"
  }
  output {
    topic = topic.app_logs
    fields = {
      level       = "info"
      service     = "checkout"
      msg         = "order placed user=alice"
      duration_ms = 35
      env         = var.env
    }
    timestamp = "2024-05-01T10:00:00.120Z"
  }
}

test "debug lines are dropped" {
  target = source.app
  input {
    value = "2024-05-01T10:00:01Z DEBUG [checkout] cache warm"
  }
  no_output = true
}

test "slow requests are flagged" {
  target = stream.slow
  input {
    value = { time = "2024-05-01T10:00:02Z", level = "info", service = "search", msg = "query", duration_ms = 900, env = "dev", file = "app.log" }
  }
  input {
    value = { time = "2024-05-01T10:00:03Z", level = "info", service = "search", msg = "query", duration_ms = 12, env = "dev" }
  }
  output {
    topic     = topic.slow_requests
    fields    = { alert = "search took 900ms: query" }
    condition = [record.file == null, record.duration_ms >= var.slow_ms]
  }
}

test "requests are counted per service and minute" {
  target = stream.requests_per_minute
  input {
    value     = { time = "2024-05-01T10:00:05Z", level = "info", service = "checkout", msg = "a", env = "dev" }
    timestamp = "2024-05-01T10:00:05Z"
  }
  input {
    value     = { time = "2024-05-01T10:00:40Z", level = "info", service = "checkout", msg = "b", env = "dev" }
    timestamp = "2024-05-01T10:00:40Z"
  }
  input {
    value     = { time = "2024-05-01T10:01:10Z", level = "info", service = "checkout", msg = "c", env = "dev" }
    timestamp = "2024-05-01T10:01:10Z"
  }
  output {
    key   = "checkout"
    value = { service = "checkout", window_start = "2024-05-01T10:00:00Z", window_end = "2024-05-01T10:01:00Z", requests = 1 }
  }
  output {
    value = { service = "checkout", window_start = "2024-05-01T10:00:00Z", window_end = "2024-05-01T10:01:00Z", requests = 2 }
  }
  output {
    fields = { window_start = "2024-05-01T10:01:00Z", requests = 1 }
  }
}
