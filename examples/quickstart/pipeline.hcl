# weir quickstart: tail a sample application log, parse it, store it as Avro
# in a topic, pick out slow requests with a stream, count requests per service
# per minute with another, and write everything to a file, the counts to
# another and the slow requests to the terminal. No external services.

variable "kafka_addr" {
  type        = string
  default     = "127.0.0.1:9092"
  description = "Kafka listener of the embedded broker (any Kafka client can read the topics)."
}

variable "registry_addr" {
  type        = string
  default     = "127.0.0.1:8081"
  description = "Schema registry listener (Confluent API)."
}

variable "env" {
  type    = string
  default = "dev"
}

variable "slow_ms" {
  type    = number
  default = 500
}

broker {
  data_dir      = "${path.root}/.weir"
  kafka_addr    = var.kafka_addr
  registry_addr = var.registry_addr
}

topic "app_logs" {
  partitions = 3
  schema     = file("app_log.avsc")
  # The sample log is dated 2024-05-01: time-based retention (Kafka's
  # default 7 days counts from the records' timestamps) would delete it
  # minutes after the first run. -1 keeps it: a rerun still finds it.
  config = {
    "retention.ms" = -1
  }
}

topic "slow_requests" {
  partitions = 1
  config = {
    "retention.ms" = -1
  }
}

# Lines look like:
# 2024-05-01T10:00:00.120Z INFO  [checkout] order placed user=alice duration=35ms
source "file" "app" {
  topic   = topic.app_logs
  include = ["${path.root}/data/*.log"]

  parse_regex {
    pattern = "^(?P<time>\\S+)\\s+(?P<level>[A-Z]+)\\s+\\[(?P<service>[^\\]]+)\\]\\s+(?P<msg>.*?)(?:\\s+duration=(?P<duration_ms>\\d+)ms)?$"
  }
  parse_timestamp {
    field  = "time"
    layout = "rfc3339"
  }
  set {
    level = lower(record.level)
    env   = var.env
  }
  filter {
    condition = record.level != "debug"
  }
}

stream "slow" {
  from = [topic.app_logs]
  to   = topic.slow_requests

  filter {
    condition = record.duration_ms != null && record.duration_ms >= var.slow_ms
  }
  set {
    alert = "${record.service} took ${record.duration_ms}ms: ${record.msg}"
  }
  remove {
    fields = ["file"]
  }
}

sink "file" "archive" {
  from = [topic.app_logs]
  path = "${path.root}/out/app_logs.jsonl"
}

sink "stdout" "console" {
  from = [topic.slow_requests]
}

topic "requests_per_minute" {
  partitions = 1
  config = {
    "retention.ms" = -1
  }
}

# Requests per service per minute of event time, no Go code: group_by,
# window and count run on weir's streams engine, with the counts kept in a
# changelog topic (a restart goes on counting where it stopped). Each
# record updates its window; the last line of a window holds its total.
stream "requests_per_minute" {
  from     = [topic.app_logs]
  to       = topic.requests_per_minute
  group_by = record.service
  window "tumbling" {
    size  = "1m"
    grace = "10m"
  }
  count {
    field = "requests"
  }
}

sink "file" "per_minute" {
  from = [topic.requests_per_minute]
  path = "${path.root}/out/requests_per_minute.jsonl"
}
