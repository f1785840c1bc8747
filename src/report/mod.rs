//! Report types with a schema_version, and one exporter per output format. Exporters return
//! bytes and do no IO.
