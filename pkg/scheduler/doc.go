// Package scheduler is Voda's engine for one GPU type: the only stateful
// piece of the core. It owns the jobs and nodes of its GPU type, applies
// events through a synchronous Step, keeps time accounting and Tiresias
// queues, rate-limits and coalesces rescheduling, runs a policy and the
// placement, and diffs the old and new plans into ordered actions (halt,
// scale-in, start, scale-out, migrate) that a Backend carries out.
//
// Time comes from an injected Clock; the engine never reads the wall clock,
// so the simulator drives it in virtual time and the controller wraps it in
// the thin Loop. The engine assumes its plan as soon as it emits it; a
// backend reports a failed action back (ActionFailed) and the engine forgets
// that assumption and retries on its next round.
//
// Import rule: the standard library, pkg/api, pkg/algorithm and
// pkg/placement only — no Kubernetes, no net/http.
package scheduler
