// Package storetest is compactord's cross-store integration suite: one test
// body (Run) executed against every object store compactord supports —
// mem://, file://, S3 (versitygw), S3 with the DynamoDB log store
// (versitygw and dynalite), GCS (fake-gcs-server) and Azure (azurite) —
// plus tests of S3-specific failure modes on an in-process S3 fake
// (gofakes3), fault-injection trials (TestFaultInjection), and the DynamoDB
// log store's own suite (RunDynamoDB), which races compactord against
// ProtocolWriter, a second implementation of Delta's DynamoDB commit
// protocol written from its description, and kills writers between their
// entry and their copy.
//
// The servers are started by scripts/test.d/emulators.sh, which exports
// COMPACTORD_TEST_S3_ENDPOINT, COMPACTORD_TEST_GCS_ENDPOINT,
// COMPACTORD_TEST_AZURE_ENDPOINT and COMPACTORD_TEST_DYNAMODB_ENDPOINT (with test credentials in the SDKs'
// standard environment variables). A store whose variable is absent is
// skipped, except under CI=true, where that is a failure.
//
// It sits under integration/, apart from the helpers other packages' tests
// use (the stores, the fake S3 and the table helpers are in
// internal/testutil/stores), because it drives compaction, retention and
// the lease: no package's tests import it, so their test builds do not link
// those. It must not be imported by production code or by other tests.
package storetest
