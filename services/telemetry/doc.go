// Package telemetry keeps the history of what GPUs and jobs do: it ingests the GPU
// samples that agents send with their heartbeats, rolls raw samples up to 1-minute and
// 1-hour min/avg/max, enforces retention, stores the metrics jobs report, and reads
// the newest readings for Prometheus. Every function that depends on the time takes
// it as a value, so tests replay recorded streams exactly.
package telemetry
