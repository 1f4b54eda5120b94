package store

// migrationTraceID adds the trace id of the request that created a job,
// shown as meta.system.trace_id (docs/operations.md, Traces).
var migrationTraceID = columnMigration("202611250002_job_trace_id", "jobs", "trace_id", "TEXT NOT NULL DEFAULT ''")
