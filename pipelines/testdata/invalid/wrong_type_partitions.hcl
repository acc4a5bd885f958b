topic "a" {
  partitions = "three"
}
