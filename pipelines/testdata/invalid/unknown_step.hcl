topic "a" {}

stream "s" {
  from = [topic.a]
  to   = "b"
  parse_xml {
    field = "message"
  }
}
