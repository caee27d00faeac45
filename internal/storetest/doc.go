// Package storetest is compactord's cross-store integration suite: one test
// body (Run) executed against every object store compactord supports —
// mem://, file://, S3 (versitygw), GCS (fake-gcs-server) and Azure
// (azurite) — plus an in-process S3 fake (gofakes3) for fast unit tests of
// S3-specific failure modes.
//
// The servers are started by scripts/test.d/emulators.sh, which exports
// COMPACTORD_TEST_S3_ENDPOINT, COMPACTORD_TEST_GCS_ENDPOINT and
// COMPACTORD_TEST_AZURE_ENDPOINT (with test credentials in the SDKs'
// standard environment variables). A store whose variable is absent is
// skipped, except under CI=true, where that is a failure.
//
// It is a test-support package: it imports "testing" and is used only from
// _test.go files.
package storetest
