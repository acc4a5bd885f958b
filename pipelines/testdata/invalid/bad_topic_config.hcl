topic "a" {
  config = {
    "retention.hours" = 24
  }
}
