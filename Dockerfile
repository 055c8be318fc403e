# Gantry: one binary. It links NVML through cgo (loaded at run time only where a driver
# exists), so the runtime image is glibc-based.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gantry ./cmd/gantry \
    && mkdir -p /out/data

FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/gantry /usr/local/bin/gantry
COPY --from=build --chown=65532:65532 /out/data /var/lib/gantry
WORKDIR /var/lib/gantry
ENV GANTRY_ADDR=0.0.0.0:8080 GANTRY_DATA_DIR=/var/lib/gantry
EXPOSE 8080
USER nonroot:nonroot
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s CMD ["/usr/local/bin/gantry", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/gantry"]
CMD ["serve"]
