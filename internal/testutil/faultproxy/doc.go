// Package faultproxy is a test helper: an HTTP reverse proxy that sits in
// front of an object-store server (the S3 emulator the store suite starts)
// and injects the failures a real network and a real S3 produce, each at a
// configurable rate: 500 InternalError, 503 SlowDown (with S3's XML error
// body), a connection reset before any response, a delayed response, a
// response lost after the server applied the request (forward, then reset
// the connection), and a response body cut in the middle. Beside those
// drawn faults, it cuts the body of every answer of chosen statuses (a 412
// whose error body never arrives) with no chance involved.
//
// It owns fault injection only. It must not interpret object-store
// semantics beyond what a fault needs (it forwards requests byte for byte,
// Host header included, so signed requests stay valid), and it is used only
// from tests.
package faultproxy
