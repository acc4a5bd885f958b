broker {
  brokers  = ["kafka-1:9092"]
  data_dir = "/var/lib/weir"
}
