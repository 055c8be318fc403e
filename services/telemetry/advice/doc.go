// Package advice turns measured histories into advice a person can act on: bottleneck
// hints for a job (input-pipeline bound, GPU memory over-provisioned, GPU idle,
// thermal or power throttling, frequent restarts), each with the evidence that made
// it fire, and a resource profile recommended from earlier similar runs with its
// cost difference. Every function here is pure: histories, thresholds, prices and
// the time come in as values.
package advice
