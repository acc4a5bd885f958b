variable "env" {
  default = "dev"
}

topic "app_logs" {
  partitions = -1
  config = {
    "retention.msec" = 1
  }
}

source "file" "app" {
  topic    = topic.app_log
  include  = ["/var/log/*.log"]
  encodng  = "json"

  parse_regex {
    pattern = "([a-z"
  }
  set {
    env   = var.envv
    level = lowr(record.level)
  }
}

sink "stdout" "console" {
  from   = topic.errors
  format = "yaml"
}
