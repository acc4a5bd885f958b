topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  parse_json {
    on_error = "ignore"
  }
}
