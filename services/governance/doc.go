// Package governance watches cost and utilisation with admin-editable rules, raises
// alerts with their evidence, notifies channels (Slack-compatible webhooks, e-mail over
// SMTP), and can act: hold pending jobs, lower a job's priority, or ask dispatch to
// checkpoint and stop an idle job (held) or release its GPUs (requeued). Every action has a dry-run mode, is recorded on its
// alert with the rule and evidence, audited, and reversible.
//
// The loop of the leader replica calls Evaluate on a schedule (and handlers on demand)
// and Deliver separately: Evaluate only writes alerts and queues notifications, so an
// unreachable webhook or SMTP server never delays metering or evaluation. Deliver sends
// what is due, retrying with exponential back-off, and reports what failed for good.
//
// An alert's fingerprint names the rule, its subject and the period (the day, week or
// month, or the job's attempt): the database refuses a second alert with the same one,
// so the same alert is never raised or sent twice, even by two replicas.
package governance
