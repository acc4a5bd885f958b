topic "logs" {}
topic "counts" {}

stream "a" {
  from = [topic.logs]
  to   = topic.counts
  window "tumbling" {
    size  = "1m"
    grace = "-10s"
    emit  = "last"
  }
  count {}
}

stream "b" {
  from = [topic.logs]
  to   = topic.counts
  window "hopping" {
    size    = "1 minute"
    advance = "1m"
  }
  count {}
}

stream "c" {
  from = [topic.logs]
  to   = topic.counts
  window "hopping" {
    size    = "1m"
    advance = "5m"
  }
  count {}
}
