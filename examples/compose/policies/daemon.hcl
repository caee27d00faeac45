daemon {
  poll = "30s"
  # Inside the container: listen on all interfaces (compose publishes 9464).
  http = "0.0.0.0:9464"
  # docker compose stop sends SIGTERM and waits stop_grace_period (40s).
  shutdown_timeout = "30s"
}
