// Package api holds the plain data types shared by every part of Voda: typed
// identifiers, job specifications and phases, nodes, allocations, placements,
// plans and the actions that carry a plan out.
//
// Import rule: the standard library only. The policies, the placement code,
// the engine, the simulator and the Kubernetes backend all speak in these
// types, so nothing backend-specific may leak in here.
package api
