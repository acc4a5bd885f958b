topic "a" {
  schema = "{\"type\": \"record\", \"name\": \"X\", \"fields\": [{\"name\": \"a\", \"type\": \"strin\"}]}"
}
