// Package quota splits one GPU type's GPUs among teams' queues: each
// queue's demand up to its nominal quota first, then the GPUs queues leave
// idle lent, within borrowing and lending limits, to the queues of the same
// cohort by weighted share (design §7, docs/queues.md). The scheduler engine
// then sizes each queue's jobs within the queue's budget with the GPU
// type's policy.
//
// It is pure arithmetic on numbers the caller gives: no clock, no
// Kubernetes, no I/O. It imports only the standard library.
package quota
