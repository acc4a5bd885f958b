topic "a" {}

stream "s" {
  from       = [topic.a]
  to         = "b"
  transforms = [transform.parse]
}
