topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  parse_regex {
    pattern = "(?P<level>[A-Z+"
  }
}
