broker {
  brokers      = ["127.0.0.1:9092"]
  worker_group = ""
}

topic "t" {}
