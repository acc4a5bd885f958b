"""Test peer: Confluent's Python schema registry client (confluent-kafka's
confluent_kafka.schema_registry) against weir's registry over https with
basic auth. Argument: a JSON object {url, ca, cert, key, schema, steps}, each
step {user, password, op, subject, cert, key, max_retries} (cert and key
override the top-level client certificate); op is register, get (the id the last
register returned), subjects or delete. Prints one JSON line per step:
{ok, id, status, code} (status and code of a SchemaRegistryError)."""
import json
import sys

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

cfg = json.loads(sys.argv[1])
last_id = None
clients = {}
for step in cfg["steps"]:
    cert, key = step.get("cert", cfg.get("cert")), step.get("key", cfg.get("key"))
    ident = (step.get("user"), step.get("password"), cert)
    if ident not in clients:
        conf = {"url": cfg["url"], "ssl.ca.location": cfg["ca"]}
        if cert:
            conf["ssl.certificate.location"] = cert
            conf["ssl.key.location"] = key
        if "max_retries" in step:
            conf["max.retries"] = step["max_retries"]
        if step.get("user"):
            conf["basic.auth.user.info"] = step["user"] + ":" + step["password"]
        clients[ident] = SchemaRegistryClient(conf)
    client = clients[ident]
    out = {"ok": False}
    try:
        op = step["op"]
        if op == "register":
            last_id = client.register_schema(step["subject"], Schema(cfg["schema"], "AVRO"))
            out = {"ok": True, "id": last_id}
        elif op == "get":
            s = client.get_schema(last_id)
            out = {"ok": True, "id": last_id, "schema": s.schema_str}
        elif op == "subjects":
            out = {"ok": True, "subjects": client.get_subjects()}
        elif op == "delete":
            client.delete_subject(step["subject"])
            out = {"ok": True}
        else:
            raise SystemExit("unknown op " + op)
    except SchemaRegistryError as e:
        out = {"ok": False, "status": e.http_status_code, "code": e.error_code, "message": e.error_message}
    except Exception as e:  # a failed TLS handshake and the like
        out = {"ok": False, "error": type(e).__name__}
    print(json.dumps(out), flush=True)
