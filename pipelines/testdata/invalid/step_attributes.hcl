topic "a" {}
topic "b" {}

transform "t" {
  parse_json {
    field        = 1
    target       = ["x"]
    remove_field = "yes"
    on_error     = 3
  }
  parse_regex {
    field   = "message"
    pattern = "[a-z]+"
  }
  parse_regex {
    pattern  = "(?P<x>"
    on_error = "drop"
  }
  parse_timestamp {
    field           = "ts"
    layout          = "yyyy-mm-dd"
    timezone        = "Mars/Olympus"
    set_record_time = "no"
    on_error        = "skip"
  }
  parse_timestamp {
    layout   = "unix_ms"
    timezone = 7
  }
  set {}
  set {
    a = record.x +
  }
  rename {
    a = 1
    b = "c"
  }
  remove {
    fields = [1, 2]
  }
  remove {}
  filter {
    condition = nosuch(record.x)
    extra     = 1
  }
  route {
    topic     = ["b"]
    condition = record.level == "error"
  }
  route {
    condition = true
  }
  remame {
    a = "b"
  }
  filtr {}
  parse_json {
    nested {}
  }
}

stream "s" {
  from       = [topic.a]
  to         = "b"
  transforms = ["t"]
  set {
    n = var.missing
  }
  route {
    topic     = "c"
    condition = record.n > 1
    on_error  = "dead_letter"
  }
  parse_timestamp {
    field    = "ts"
    target   = ""
    timezone = "Europe/Paris"
  }
}
