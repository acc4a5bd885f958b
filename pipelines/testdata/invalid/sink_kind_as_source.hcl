topic "a" {}

source "stdout" "x" {
  topic = topic.a
}
