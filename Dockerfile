# compactord container image (multi-stage). Untested here: Docker does not
# run on the machine this repository is developed on (see docs/kubernetes.md,
# "Running in containers").
#
#   docker build -t compactord .
#   docker run --rm -v $PWD/examples/compose/policies:/etc/compactord/policies:ro -p 9464:9464 compactord

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/compactord ./cmd/compactord

# Static binary, no shell; runs as an unprivileged user. SIGTERM (docker stop)
# lets in-flight runs finish or abandons them cleanly within shutdown_timeout.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/compactord /usr/local/bin/compactord
USER nonroot:nonroot
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/compactord"]
CMD ["run", "--policies", "/etc/compactord/policies", "--http", "0.0.0.0:9464", "--log-format", "json"]
