# mysql-cdc-to-es: capture the inventory database of a MySQL/MariaDB server
# canal style (consistent snapshot, then the binlog), one topic per table
# keyed by primary key with Debezium-like Avro envelopes, and keep an
# Elasticsearch index per table equal to the table: _id = primary key,
# document = the row's after image, deletes delete, and external versions
# from the binlog position so replays never move a document backwards.

variable "mysql_host" {
  type    = string
  default = "127.0.0.1"
}

variable "mysql_port" {
  type    = number
  default = 3306
}

variable "mysql_user" {
  type    = string
  default = "cdc"
}

variable "mysql_password" {
  type    = string
  default = ""
}

variable "database" {
  type        = string
  default     = "inventory"
  description = "Database to capture."
}

variable "elasticsearch_url" {
  type    = string
  default = "http://127.0.0.1:9200"
}

variable "index_prefix" {
  type    = string
  default = "inventory"
}

variable "sink_group" {
  type        = string
  default     = "weir-sink-search"
  description = "Consumer group of the sink (a new group replays the topics from the beginning)."
}

variable "kafka_addr" {
  type    = string
  default = "127.0.0.1:9092"
}

variable "registry_addr" {
  type    = string
  default = "127.0.0.1:8081"
}

broker {
  data_dir      = "${path.root}/.weir"
  kafka_addr    = var.kafka_addr
  registry_addr = var.registry_addr
}

# DDL statements (JSON), and the source's default topic.
topic "schema_changes" {
  name = "shop.schema-changes"
}

source "mysql" "shop" {
  topic               = topic.schema_changes
  host                = var.mysql_host
  port                = var.mysql_port
  user                = var.mysql_user
  password            = var.mysql_password
  server_name         = "shop"
  include_databases   = [var.database]
  topic_template      = "{server}.{db}.{table}"
  schema_change_topic = topic.schema_changes

  # One table block per captured table: the source writes its row changes
  # to the topic "shop.<database>.<table>" (topic_template), which sinks
  # and streams refer to by the block's label: source.shop.table["customers"].topic.
  table "customers" {
    name = "${var.database}.customers"
    # Column rules, as Debezium's column.* settings, for example:
    #   exclude_columns = ["internal_notes"]
    #   mask_columns    = { card_number = 8 }
    #   hash_columns    = ["email"]
    #   hash_salt       = var.email_salt
    topic {
      partitions = 3
      config = {
        "cleanup.policy" = "compact" # the newest change per primary key is kept for good
      }
    }
  }

  # Composite primary key (order_id, line).
  table "order_lines" {
    name = "${var.database}.order_lines"
    topic {
      partitions = 3
      config = {
        "cleanup.policy" = "compact"
      }
    }
  }
}

sink "elasticsearch" "search" {
  from  = [source.shop.table["customers"].topic]
  group = var.sink_group
  urls  = [var.elasticsearch_url]
  index = "${var.index_prefix}-customers"
  # _id = primary key, document = after image, op d / tombstones = deletes,
  # version_type = "external" with version_header = "weir.cdc.version".
  cdc            = true
  flush_interval = "200ms"
}

# Composite primary key (order_id, line): _id = "<order_id>|<line>".
sink "elasticsearch" "search_order_lines" {
  from           = [source.shop.table["order_lines"].topic]
  group          = "${var.sink_group}-order-lines"
  urls           = [var.elasticsearch_url]
  index          = "${var.index_prefix}-order-lines"
  cdc            = true
  flush_interval = "200ms"
}
