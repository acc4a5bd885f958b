topic "a" {}

sink "elastic" "es" {
  from = topic.a
}
