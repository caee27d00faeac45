// Package failure says what to do about an error, in the terms of an
// operator: retry it later, quarantine the bad input and go on, or halt the
// table. It also owns the typed error that names a corrupt object
// (CorruptFileError), so that whoever quarantines takes the path from the
// error instead of searching for the bad file again.
//
// Every layer may import it; it imports nothing of ours (a leaf). It must
// not know any other package's error types: an error states its class by
// implementing Classed, by wrapping a sentinel made with New, or by being
// wrapped with With.
package failure
