// Package testutil holds helpers shared by the tests of several packages:
// locating ../shared and the Delta test tables beside the repository.
package testutil
