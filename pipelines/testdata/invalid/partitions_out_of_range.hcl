topic "a" {
  partitions = 0
}
