topic "a" {}

sink "stdout" "console" {
  from   = topic.a
  format = "xml"
}
