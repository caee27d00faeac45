// Package httpapi is the daemon's HTTP API: /metrics (the compactord_*
// series built from the scheduler's status at each scrape, plus the process
// and Go collectors), /healthz, /readyz, /status, the plan preview and the
// mutating endpoints (POST /tables/{name}/run, POST /reload); and its
// guards: a loopback listener answers only a loopback Host or an allowed
// name, cross-origin mutations are refused, a bearer token is needed off
// loopback, and a panicking handler answers 500 without taking the
// process down.
//
// It reaches the daemon only through Daemon's functions. It must not hold
// the scheduler, load policies, touch a table, or render HTML (package
// webui does, mounted through Daemon.Mount).
package httpapi
