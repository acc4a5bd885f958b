topic "a" {}
topic "b" {}
topic "c" {}

stream "s" {
  from         = [topic.a]
  to           = "b"
  exactly_once = "yes"
}

sink "kafka" "copy" {
  from         = [topic.b]
  topic        = "c"
  exactly_once = 1
}

sink "stdout" "out" {
  from         = [topic.b]
  exactly_once = true
}
