package store

// migrationResultFiles adds the blob key of a job's result file, which the
// API links as the result's download_url (docs/media.md).
var migrationResultFiles = columnMigration("202611250001_job_result_files", "jobs", "result_file", "TEXT NOT NULL DEFAULT ''")
