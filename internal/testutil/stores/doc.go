// Package stores is the test support for tests that run against object
// stores: the stores the integration suite covers (Stores, ForEachStore,
// S3Table, S3DynamoTable, GCSTable, AzureTable: a fresh table location on
// the emulators scripts/test.d/emulators.sh starts, skipped when its
// variable is absent, failed under CI=true), an in-process S3 (NewFakeS3:
// gofakes3 with conditional writes and a record of reads), and table
// helpers (Open, CopyTable, LiveRows, DataObjects).
//
// It owns no suite and must not import the table operations (compaction,
// retention, the lease): packages whose tests use it would link them. The
// suites that drive those live in integration/storetest. It imports
// "testing" and must not be imported by production code.
package stores
