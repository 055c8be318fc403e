// Package quotas keeps the teams' quotas, per GPU model or for any model: the guaranteed
// GPUs, how much a team may borrow from its cohort and lend to it, and CPU and memory.
// It checks what the scheduler cannot work with (a borrowing limit beyond what the
// cohort lends, a lending limit beyond the guarantee) and says what a quota below the
// current use means. Changes are audited; the scheduler reads quotas at its next pass
// and never stops a running job because of one.
package quotas
