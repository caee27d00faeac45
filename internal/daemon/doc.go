// Package daemon is one running `compactord run`: the policy directory
// loaded (and reloaded on SIGHUP or POST /reload, keeping the previous
// policies when the new ones are bad), the scheduler built from the daemon
// block and the flags, the signals (SIGUSR1 runs every table now), the
// HTTP listener with the API (internal/httpapi) and the HTML view
// (internal/webui) mounted on it, and the shutdown within the timeout.
//
// What a run does to a table comes in as a Backend (the binary's is
// runner.Backend over Delta tables; tests and the demo wrap it). It must
// not parse flags, open tables itself, or know any table operation.
package daemon
