module github.com/glebarez/go-sqlite

go 1.22

require modernc.org/sqlite v1.51.0
