variable "db" {
  type    = string
  default = "inv"
}

topic "taken" {
  name = "shop.inv.lines"
}

topic "out" {
  name = source.shop.topics[0]
}

source "mysql" "shop" {
  topic             = "shop.schema-changes"
  user              = "cdc"
  server_name       = "shop"
  include_databases = [var.db]

  table "inv.customers" {}
  table "inv.lines" {
    topic { partitions = 2 }
  }
}

sink "stdout" "a" {
  from = [source.shop.table["inv.order"].topic]
}

sink "stdout" "b" {
  from = [source.shop.table["${var.db}.missing"].topic]
}

sink "stdout" "c" {
  from = source.shop.tabels
}

sink "stdout" "d" {
  from = source.shp.topics
}

stream "e" {
  from = [source.shop.table.customers.topic]
  to   = "e-out"
}
