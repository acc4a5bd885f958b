# app-logs-to-elk: tail JSON application logs, parse and enrich them, buffer
# them durably as Avro in a topic, and bulk-index them into Elasticsearch
# (daily indices app-logs-YYYY.MM.DD, _id from the record's topic, partition
# and offset, so a re-delivery after a restart overwrites its document
# instead of duplicating it).

variable "log_files" {
  type        = list(string)
  default     = ["data/*.log"]
  description = "Globs of the log files to tail (relative to this folder, or absolute)."
}

variable "elasticsearch_url" {
  type    = string
  default = "http://127.0.0.1:9200"
}

variable "index_prefix" {
  type    = string
  default = "app-logs"
}

variable "kafka_addr" {
  type    = string
  default = "127.0.0.1:9092"
}

variable "registry_addr" {
  type    = string
  default = "127.0.0.1:8081"
}

locals {
  include = [for g in var.log_files : startswith(g, "/") ? g : "${path.root}/${g}"]
}

broker {
  data_dir      = "${path.root}/.weir"
  kafka_addr    = var.kafka_addr
  registry_addr = var.registry_addr
}

topic "app_logs" {
  partitions = 3
  schema     = file("app_log.avsc")
  config = {
    "retention.ms" = 259200000 # keep 3 days while Elasticsearch catches up
    # ...3 days from when weir stored the event: parse_timestamp makes the
    # log line's own time the record's timestamp, and retention by that
    # time would delete lines older than 3 days (a backlog, a replay) at
    # the next retention check, before the sink has read them.
    "message.timestamp.type" = "LogAppendTime"
  }
}

source "file" "app_logs" {
  topic   = topic.app_logs
  include = local.include

  # {"ts":"2024-05-01T10:00:00.120Z","lvl":"info","svc":"api","msg":"...","trace":"...","status":200,"took":12.5}
  parse_json {
    field = "message"
  }
  rename {
    lvl   = "level"
    svc   = "service"
    trace = "trace_id"
    took  = "duration_ms"
  }
  parse_timestamp {
    field  = "ts"
    target = "time"
  }
  set {
    level = lower(coalesce(record.level, "info"))
  }
  filter {
    condition = record.level != "debug"
  }
}

sink "elasticsearch" "es" {
  from            = [topic.app_logs]
  urls            = [var.elasticsearch_url]
  index           = "${var.index_prefix}-%%{+2006.01.02}"
  timestamp_field = "time"
  id_from         = "offset"
  # A static member of its group (Kafka's group.instance.id): weir restarted
  # after a crash takes its place back at once, instead of waiting out the
  # dead process's 45 s session before the topic's partitions are assigned.
  # Give each weir run of this pipeline on one broker its own id.
  instance_id = "app-logs-to-elk"
}
