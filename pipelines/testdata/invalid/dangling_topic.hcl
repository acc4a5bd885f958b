topic "app_logs" {}

sink "stdout" "console" {
  from = [topic.app_log]
}
