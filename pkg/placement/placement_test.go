package placement_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/placement"
)

// want builds an expected Output; moves and restarts default to empty.
type want struct {
	placement  api.Placement
	moves      map[api.JobID][]api.WorkerMove
	restartAll map[api.JobID]bool
}

func (w want) output() placement.Output {
	out := placement.Output{Placement: w.placement, Moves: w.moves, RestartAll: w.restartAll}
	if out.Moves == nil {
		out.Moves = map[api.JobID][]api.WorkerMove{}
	}
	if out.RestartAll == nil {
		out.RestartAll = map[api.JobID]bool{}
	}
	return out
}

func move(i int, from, to string) api.WorkerMove {
	return api.WorkerMove{Index: i, From: api.NodeName(from), To: api.NodeName(to)}
}

func TestPlace(t *testing.T) {
	cases := map[string]struct {
		in   placement.Input
		want want
	}{
		"an empty cluster with nothing to place gives empty maps": {
			in:   makeInput().obj(),
			want: want{placement: api.Placement{}},
		},
		"fresh placement packs the largest jobs first onto the fewest nodes": {
			in: makeInput().node("c", 8).node("a", 8).node("b", 8).
				alloc("j1", 4).alloc("j2", 4).alloc("j3", 8).alloc("j4", 2).obj(),
			want: want{placement: api.Placement{
				"j3": names("a", "a", "a", "a", "a", "a", "a", "a"),
				"j1": names("b", "b", "b", "b"),
				"j2": names("b", "b", "b", "b"),
				"j4": names("c", "c"),
			}},
		},
		"fresh placement puts each job on the smallest node that holds it": {
			in: makeInput().node("n8", 8).node("n4", 4).node("n2", 2).
				alloc("big", 8).alloc("mid", 4).alloc("small", 2).obj(),
			want: want{placement: api.Placement{
				"big":   names("n8", "n8", "n8", "n8", "n8", "n8", "n8", "n8"),
				"mid":   names("n4", "n4", "n4", "n4"),
				"small": names("n2", "n2"),
			}},
		},
		"a job too big for any node fills the emptiest nodes first": {
			in: makeInput().node("a", 4).node("b", 4).node("c", 4).
				alloc("wide", 6).alloc("small", 2).obj(),
			want: want{placement: api.Placement{
				"wide":  names("a", "a", "a", "a", "b", "b"),
				"small": names("b", "b"),
			}},
		},
		"scale-in removes the highest indices and moves nobody": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("j", 3).at("j", "a", "a", "a", "a", "b", "b").
				alloc("k", 2).at("k", "b", "b").obj(),
			want: want{placement: api.Placement{
				"j": names("a", "a", "a"),
				"k": names("b", "b"),
			}},
		},
		"scale-in of a job spread over two nodes gathers it onto one": {
			// Three workers fit on b, where one survivor already runs: two
			// moves buy a job that no longer crosses nodes.
			in: makeInput().node("a", 4).node("b", 4).
				alloc("j", 3).at("j", "a", "a", "b", "b").
				alloc("k", 2).at("k", "a", "a").obj(),
			want: want{
				placement: api.Placement{
					"j": names("b", "b", "b"),
					"k": names("a", "a"),
				},
				moves: map[api.JobID][]api.WorkerMove{"j": {move(0, "a", "b"), move(1, "a", "b")}},
			},
		},
		"scale-out adds workers on the job's node when it has room": {
			in: makeInput().node("a", 8).node("b", 8).
				alloc("j", 4).at("j", "a", "a").
				alloc("k", 2).at("k", "a", "a").obj(),
			want: want{placement: api.Placement{
				"j": names("a", "a", "a", "a"),
				"k": names("a", "a"),
			}},
		},
		"scale-out with no room left on the job's node moves it whole": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("j", 4).at("j", "a", "a").
				alloc("k", 2).at("k", "a", "a").obj(),
			want: want{
				placement: api.Placement{
					"j": names("b", "b", "b", "b"),
					"k": names("a", "a"),
				},
				moves:      map[api.JobID][]api.WorkerMove{"j": {move(0, "a", "b"), move(1, "a", "b")}},
				restartAll: map[api.JobID]bool{"j": true},
			},
		},
		"scale-out beyond one node keeps the old workers and adds new ones next door": {
			in: makeInput().node("a", 4).node("b", 4).node("c", 4).
				alloc("j", 6).at("j", "a", "a", "a", "a").
				alloc("k", 2).at("k", "b", "b").obj(),
			want: want{placement: api.Placement{
				"j": names("a", "a", "a", "a", "b", "b"),
				"k": names("b", "b"),
			}},
		},
		"a surviving worker keeps its node and the others fill in by node name": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("j", 4).at("j", "b", "a").obj(),
			want: want{
				placement: api.Placement{"j": names("a", "a", "a", "a")},
				moves:     map[api.JobID][]api.WorkerMove{"j": {move(0, "b", "a")}},
			},
		},
		"unchanged jobs stay put while the others change around them": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("same", 2).at("same", "a", "a").
				alloc("shrinks", 1).at("shrinks", "a", "a").
				alloc("grows", 3).at("grows", "b").
				alloc("new", 1).obj(),
			want: want{placement: api.Placement{
				"same":    names("a", "a"),
				"shrinks": names("a"),
				"grows":   names("b", "b", "b"),
				"new":     names("a"),
			}},
		},
		// Packing around "old" spreads "big" over two nodes; moving the
		// two GPUs of "old" lets it sit on one.
		"a small unchanged job moves so a big new job fits on one node": {
			in: makeInput().node("n2", 2).node("n4", 4).node("n8", 8).
				alloc("old", 2).at("old", "n8", "n8").
				alloc("big", 8).alloc("mid", 4).obj(),
			want: want{
				placement: api.Placement{
					"old": names("n2", "n2"),
					"big": names("n8", "n8", "n8", "n8", "n8", "n8", "n8", "n8"),
					"mid": names("n4", "n4", "n4", "n4"),
				},
				moves:      map[api.JobID][]api.WorkerMove{"old": {move(0, "n8", "n2"), move(1, "n8", "n2")}},
				restartAll: map[api.JobID]bool{"old": true},
			},
		},
		// Gathering "grow" on either node would take moving a job of three
		// GPUs, larger than it: it stays spread and nothing else moves.
		"no unchanged job moves for a smaller job": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("p", 3).at("p", "a", "a", "a").
				alloc("q", 3).at("q", "b", "b", "b").
				alloc("grow", 2).at("grow", "a").obj(),
			want: want{
				placement: api.Placement{
					"p":    names("a", "a", "a"),
					"q":    names("b", "b", "b"),
					"grow": names("a", "b"),
				},
			},
		},
		"jobs without an allocation release their GPUs": {
			in: makeInput().node("a", 4).
				at("done", "a", "a", "a", "a").
				alloc("halted", 0).at("halted", "a").
				alloc("new", 4).obj(),
			want: want{placement: api.Placement{"new": names("a", "a", "a", "a")}},
		},
		"node loss moves the lost workers and restarts a job that loses all": {
			in: makeInput().node("a", 4).node("b", 4).
				alloc("gone", 2).at("gone", "c", "c").
				alloc("half", 2).at("half", "a", "c").
				alloc("safe", 2).at("safe", "a", "a").obj(),
			want: want{
				placement: api.Placement{
					"gone": names("b", "b"),
					"half": names("a", "a"),
					"safe": names("a", "a"),
				},
				moves: map[api.JobID][]api.WorkerMove{
					"gone": {move(0, "c", "b"), move(1, "c", "b")},
					"half": {move(1, "c", "a")},
				},
				restartAll: map[api.JobID]bool{"gone": true},
			},
		},
		"a node that shrank under its jobs is never overfilled": {
			// a now has 2 GPUs but four workers say they run there.
			in: makeInput().node("a", 2).node("b", 4).
				alloc("j", 4).at("j", "a", "a", "a", "a").obj(),
			want: want{
				placement: api.Placement{"j": names("b", "b", "b", "b")},
				moves: map[api.JobID][]api.WorkerMove{"j": {
					move(0, "a", "b"), move(1, "a", "b"), move(2, "a", "b"), move(3, "a", "b"),
				}},
				restartAll: map[api.JobID]bool{"j": true},
			},
		},
		"when a shrunk node can keep only one of two unchanged jobs, the larger stays": {
			in: makeInput().node("a", 2).node("b", 4).
				alloc("small", 1).at("small", "a").
				alloc("large", 2).at("large", "a", "a").obj(),
			want: want{
				placement: api.Placement{
					"large": names("a", "a"),
					"small": names("b"),
				},
				moves:      map[api.JobID][]api.WorkerMove{"small": {move(0, "a", "b")}},
				restartAll: map[api.JobID]bool{"small": true},
			},
		},
		"a growing job takes its node's room before a smaller shrinking job keeps its own": {
			// a: grow 2→4 and shrink 2→1 compete for the 4 GPUs left after
			// keep; the larger job stays and the single survivor moves.
			in: makeInput().node("a", 8).node("b", 8).
				alloc("keep", 4).at("keep", "a", "a", "a", "a").
				alloc("grow", 4).at("grow", "a", "a").
				alloc("shrink", 1).at("shrink", "a", "a").obj(),
			want: want{
				placement: api.Placement{
					"keep":   names("a", "a", "a", "a"),
					"grow":   names("a", "a", "a", "a"),
					"shrink": names("b"),
				},
				moves:      map[api.JobID][]api.WorkerMove{"shrink": {move(0, "a", "b")}},
				restartAll: map[api.JobID]bool{"shrink": true},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := placement.Place(tc.in)
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			if diff := cmp.Diff(tc.want.output(), got); diff != "" {
				t.Errorf("Place (-want,+got):\n%s", diff)
			}
			if err := checkInvariants(tc.in, got); err != nil {
				t.Errorf("invariants: %v", err)
			}
		})
	}
}

func TestPlaceErrors(t *testing.T) {
	cases := map[string]struct {
		in      placement.Input
		is      error
		message string
	}{
		"more workers than GPUs": {
			in:      makeInput().node("a", 4).node("b", 2).alloc("j", 4).alloc("k", 3).obj(),
			is:      placement.ErrOverCapacity,
			message: "workers of 7 GPUs for 6 GPUs",
		},
		"workers but no nodes": {
			in:      makeInput().alloc("j", 1).obj(),
			is:      placement.ErrOverCapacity,
			message: "workers of 1 GPUs for 0 GPUs",
		},
		"an allocation beyond any cluster": {
			in:      makeInput().node("a", placement.MaxWorkers).node("b", 8).alloc("j", placement.MaxWorkers+1).obj(),
			is:      placement.ErrOverCapacity,
			message: "more than 16777216 GPUs",
		},
		"a node listed twice": {
			in:      makeInput().node("a", 4).node("b", 4).node("a", 2).obj(),
			is:      placement.ErrInvalidInput,
			message: "node a is listed twice",
		},
		"a node with negative GPUs": {
			in:      makeInput().node("a", -1).obj(),
			is:      placement.ErrInvalidInput,
			message: "node a has -1 GPUs",
		},
		"a node without a name": {
			in:      makeInput().node("", 4).obj(),
			is:      placement.ErrInvalidInput,
			message: "empty name",
		},
		"a negative allocation": {
			in:      makeInput().node("a", 4).alloc("j", -2).obj(),
			is:      placement.ErrInvalidInput,
			message: "job j is allocated -2 workers",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := placement.Place(tc.in)
			if !errors.Is(err, tc.is) {
				t.Fatalf("Place error = %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("Place error = %q, want it to mention %q", err, tc.message)
			}
			if diff := cmp.Diff(placement.Output{}, got); diff != "" {
				t.Errorf("Place returned a result with its error (-want,+got):\n%s", diff)
			}
		})
	}
}
