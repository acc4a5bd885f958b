variable "env" {
  default = "dev"
}

locals {
  service = "checkout-${var.env}"
}

topic "app_logs" {
  partitions = 2
}

transform "parse" {
  parse_json {
    field = "message"
  }
}

stream "enrich" {
  from       = [topic.app_logs]
  to         = "enriched"
  transforms = [transform.parse]
  set {
    service = local.service
    level   = upper(coalesce(record.level, "info"))
  }
  route {
    topic     = "errors"
    condition = record.level == "ERROR"
  }
}

sink "stdout" "console" {
  from = ["enriched", "errors"]
}
