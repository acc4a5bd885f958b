variable "partitions" {
  type    = number
  default = "many"
}
