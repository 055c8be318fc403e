// Package agent is the node agent: it joins the server with a join token, keeps
// the node credential in its data dir, heartbeats with GPU telemetry, long-polls
// for leases, runs each attempt under a supervisor process, ships its output in
// chunks with offsets, and reports when it started and how it exited.
//
// Jobs outlive the agent. Each attempt runs under a small supervisor (the shim,
// `gantry agent shim`, see RunShim) in its own session: the shim starts the command
// in its own process group with its output going to files in the attempt's
// directory, waits for it, and writes its exit status to a file. The agent only
// reads those files, so a restarted agent re-attaches to what runs and finds what
// ended while it was away.
//
// Self-fencing: after each heartbeat the server accepted, the agent writes a lease
// file with deadlines well inside the server's node timeout. A shim whose lease
// runs out (the agent died, froze, or lost the server) stops its job, SIGTERM then
// SIGKILL, before the server declares the node lost and runs the job elsewhere; so
// an attempt never runs twice at once. A server that is down (connection refused,
// or a 502/503/504 from a proxy) cannot reschedule anything, so the agent keeps the
// lease alive then and jobs ride out a server restart.
package agent
