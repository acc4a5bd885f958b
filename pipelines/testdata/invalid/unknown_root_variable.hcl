topic "a" {
  name = topics.b
}
