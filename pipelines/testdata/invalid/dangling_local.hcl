locals {
  prefix = "logs"
}

topic "a" {
  name = "${local.prefx}-a"
}
