topic "a" {}

source "fiel" "app" {
  topic = topic.a
}
