topic "logs" {}
topic "counts" {}
topic "debug" {}

transform "split" {
  route {
    topic     = topic.debug
    condition = record.level == "debug"
  }
}

stream "counts" {
  from       = [topic.logs]
  to         = topic.counts
  transforms = [transform.split]
  count {}
}
