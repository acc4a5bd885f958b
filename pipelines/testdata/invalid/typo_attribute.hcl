topic "a" {
  partitons = 3
}
