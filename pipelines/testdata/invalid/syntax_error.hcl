topic "a" {
  partitions = 3

sink "stdout" "x" {
