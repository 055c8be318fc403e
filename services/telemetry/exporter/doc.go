// Package exporter serves Gantry's state in the Prometheus text format: per-GPU
// gauges under the names and labels of NVIDIA's dcgm-exporter (so that DCGM
// dashboards work unchanged), with Gantry's job, project and team labels added, and
// Gantry's own metrics (queues, job states, GPU allocation, cost, scheduling). It reads
// the store on every scrape, so any server replica answers alike; only the scheduling
// metrics live in the process, on the replica that schedules.
package exporter
