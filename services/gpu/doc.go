// Package gpu is Gantry's edge to the GPUs of one node: it discovers what is
// installed and samples how it is used, for the node agent.
//
// The agent codes against [Source]. Two implementations exist:
//
//   - [OpenNVML] reads real devices through NVIDIA's NVML (github.com/NVIDIA/go-nvml,
//     which needs cgo). Where no NVIDIA driver is installed, or the binary was
//     built without cgo, it returns an error matching [ErrNoDriver] and makes no
//     other NVML call, because any NVML call after a failed nvmlInit aborts the
//     process.
//   - [NewSimulated] builds a fleet from a spec such as "2xA100-80GB,4xL4-24GB".
//     Everything it reports carries Simulated == true and model names that start
//     with "SIMULATED ", so no screen can mistake it for hardware. Its samples
//     are driven by an injected clock and by load and process-memory setters,
//     so tests can assert exact values.
//
// Values NVML cannot report on a device (NOT_SUPPORTED, or a function missing
// from an older driver) are absent: nil pointers, empty strings or nil slices,
// never zero and never an error. Units follow Gantry's rules: memory in MiB,
// throughput in KiB/s, power in watts, time in UTC.
//
// XID errors are collected through an NVML event set registered at open and
// drained, without waiting, by each Sample; NVML's legacy events carry no
// timestamp, so an XID is reported in the first Sample after it happened.
// [Describe] renders an inventory and a sample for people, as used by
// `gantry agent --probe`.
package gpu
