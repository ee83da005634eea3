module github.com/scylla-cdc/scylla-cdc/conformance/go

go 1.25.0

require (
	github.com/gocql/gocql v1.17.0
	github.com/scylladb/scylla-cdc-go v1.2.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.18.4 // indirect
	golang.org/x/sync v0.19.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
)

// scylla-cdc-go v1.2.1 is built against ScyllaDB's fork of gocql through this replace
// directive of its own go.mod (replace directives of dependencies do not apply, so it is
// repeated here).
replace github.com/gocql/gocql => github.com/scylladb/gocql v1.17.3
