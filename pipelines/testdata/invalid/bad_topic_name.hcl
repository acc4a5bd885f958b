topic "a" {
  name = "app logs!"
}
