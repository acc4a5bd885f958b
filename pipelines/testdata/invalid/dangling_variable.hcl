variable "env" {
  default = "dev"
}

topic "a" {
  name = "logs-${var.evn}"
}
