sink "stdout" "console" {
  format = "json"
}
