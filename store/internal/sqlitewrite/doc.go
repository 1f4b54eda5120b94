// Package sqlitewrite schedules a SQLite store's use of its one
// connection: a gate that lets a client's requests (Interactive) in before
// background work (Pool, the gated gorm ConnPool), a writer that commits
// waiting writes together (Writer, group commit), and a checkpointer that
// copies the write-ahead log into the database file off that connection
// (Checkpointer). DSN is the connection string all three assume.
package sqlitewrite
