# worker_group needs a cluster every worker reaches, not the embedded broker.
broker {
  worker_group = "shop-workers"
}

topic "t" {}
