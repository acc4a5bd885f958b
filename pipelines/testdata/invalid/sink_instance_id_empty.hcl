topic "t" {}

sink "stdout" "out" {
  from        = [topic.t]
  instance_id = ""
}
