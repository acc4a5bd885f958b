topic "a" {}

sorce "file" "app" {
  topic   = topic.a
  include = ["/var/log/*.log"]
}
