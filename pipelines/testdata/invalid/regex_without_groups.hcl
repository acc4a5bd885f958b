topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  parse_regex {
    pattern = "^\\d+ \\w+"
  }
}
