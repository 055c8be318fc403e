// Package audit is Gantry's tamper-evident record of who did what: an append-only log
// in which every event carries the SHA-256 of its canonical encoding and of the event
// before it. Services append from their own layer (Append), with the actor taken from the
// request context (WithActor); Verify walks the chain and names the first broken event;
// Export writes JSON Lines for a SIEM. The database refuses UPDATE and DELETE on the table
// (migration 0006), so a change needs someone who can drop a trigger — and Verify sees it.
package audit
