source "mysql" "shop" {
  topic             = "shop.schema-changes"
  user              = "cdc"
  server_name       = "shop"
  include_databases = ["inv"]
  exclude_tables    = ["inv.secret*"]

  table "inv.customers" {
    hash_columns = ["email"]
  }
  table "inv.secrets" {}
  table "inv.orders" {
    mask_columns    = { card = 0 }
    exclude_columns = ["card"]
    bogus           = 1
  }
  table "inv.lines" {
    include_columns  = ["id"]
    exclude_columns  = ["x"]
    truncate_columns = { notes = "long" }
  }
  table "customers" {}
}

sink "stdout" "a" {
  from = [source.shop.table["inv.order"].topic]
}

source "file" "logs" {
  topic   = "logs"
  include = ["/tmp/x.log"]
  table "x.y" {}
}
