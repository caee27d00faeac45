# The smallest useful policy: everything not named here comes from the
# defaults block (daemon.hcl) or the built-in defaults (`compactord check`
# prints the effective values).
table "events" {
  url      = "file:///data/events"
  schedule = "@every 1m"
  strategy = "auto"
}
