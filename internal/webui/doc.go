// Package webui is the daemon's HTML view: the fleet page at / (a shell
// that fleet.js fills from /ui/fleet.json, the rows this package formats
// with their "attention" column, and /status), a page per table at /tables/{name}
// (server-rendered, charts as SVG drawn here), the embedded assets under
// /ui/, and the in-memory history (backlog samples, recent runs) the table
// pages chart.
//
// It reads only what the daemon already computes (the scheduler's status,
// the planner's dry run, the inspect report) through Source. It must not
// load anything from outside the listener into a page (the
// Content-Security-Policy says so to the browser), hold business logic,
// write to a table, or persist anything: a restart starts with an empty
// history. What needs attention (attention.go) is read off the status and
// the policy's triggers only; it decides nothing the scheduler acts on.
package webui
