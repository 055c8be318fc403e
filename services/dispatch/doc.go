// Package dispatch is the server side of the agent protocol and the loop that turns
// scheduling decisions into work on nodes (DESIGN.md, "Agent protocol").
//
// Nodes join with a join token and get a credential whose SHA-256 alone is stored.
// They heartbeat; a node silent past Config.NodeTimeout is marked lost, its
// allocations end and its jobs are requeued (or failed when no retries remain).
// Agents long-poll [Service.Leases] for every allocation wanted on their node;
// each carries its attempt number, the fencing token that [Service.Report] and
// [Service.AppendLog] check, so a node presumed lost can never overwrite a job that
// was rescheduled. The agent, for its part, stops its jobs before the server gives
// up on it (see services/agent), so an attempt never runs twice at once.
//
// [Service.Run] is the loop: mark silent nodes lost, take a snapshot of the queue
// and the free capacity, ask the [Scheduler] for a plan, and apply the plan in one
// transaction. All state is in the database, so a restarted server carries on where
// it stopped; liveness waits one NodeTimeout after start before it judges a node.
package dispatch
