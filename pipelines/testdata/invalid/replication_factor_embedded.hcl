topic "a" {
  replication_factor = 3
}
