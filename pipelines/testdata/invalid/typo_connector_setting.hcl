topic "a" {}

source "file" "app" {
  topic   = topic.a
  inclde  = ["/var/log/*.log"]
}
