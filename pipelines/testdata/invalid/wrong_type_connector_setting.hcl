topic "a" {}

source "file" "app" {
  topic         = topic.a
  include       = ["/var/log/*.log"]
  poll_interval = "soon"
}
