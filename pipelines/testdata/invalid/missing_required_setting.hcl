topic "a" {}

source "file" "app" {
  topic = topic.a
}
