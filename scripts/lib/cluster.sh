# Sourced by the benchmark scripts. write_cluster FILE NAME TYPE SPEC COUNT LINK writes a cluster
# inventory of COUNT devices of type TYPE (SPEC: its flow mapping) on one local machine whose
# devices share LINK.
write_cluster() {
  cat >"$1" <<YAML
name: $2
device_types:
  $3: $4
machines:
  - {name: local, host: 127.0.0.1, device_type: $3, count: $5, link: $6}
YAML
}
