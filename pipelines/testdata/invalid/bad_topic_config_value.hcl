topic "a" {
  config = {
    "cleanup.policy" = "shred"
  }
}
