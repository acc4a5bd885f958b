variable "env" {
  type = string
}

topic "a" {
  name = "logs-${var.env}"
}
