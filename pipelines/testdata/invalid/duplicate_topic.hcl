topic "a" {}

topic "a" {
  partitions = 2
}
