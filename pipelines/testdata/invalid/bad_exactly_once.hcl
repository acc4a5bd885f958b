topic "t" {}

source "file" "a" {
  topic        = topic.t
  include      = ["/var/log/*.log"]
  exactly_once = "yes"
}

source "file" "b" {
  topic        = topic.t
  include      = ["/var/log/b/*.log"]
  exactly_once = 1
}
