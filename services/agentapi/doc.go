// Package agentapi is the wire format of the agent protocol (DESIGN.md, "Agent
// protocol"): the JSON bodies that node agents and the server exchange under
// /api/v1/agent, and the checks that refuse a malformed one. Both sides import
// it, so the two can never disagree on a field name.
//
// The protocol is level-triggered: a lease poll answers with every allocation
// the server wants on the node, each carrying its attempt number as a fencing
// token. The agent starts what it does not run, stops what is marked to stop,
// and kills what is absent (an attempt the server moved elsewhere). Reports and
// log chunks name the attempt; one from an attempt that is no longer current is
// refused with 409 and code "stale_attempt".
package agentapi
