package ui_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/ui"
)

// bigState is 150 nodes of 8 v100s, each with one job of 8 workers, 3
// nodes of k80, and 250 jobs waiting for v100s.
func bigState() ui.State {
	s := ui.State{Now: t0, Viewer: ui.Viewer{Name: "root", Admin: true}, Schedulers: map[string]rest.Scheduler{
		"v100": {GPUType: "v100", Algorithm: "FIFO", GPUs: 1200},
		"k80":  {GPUType: "k80", Algorithm: "FIFO", GPUs: 24},
	}}
	for i := range 150 {
		node := fmt.Sprintf("v-%03d", i)
		s.Nodes = append(s.Nodes, ui.Node{Name: node, GPUType: "v100", GPUs: 8})
		var placement []string
		for range 8 {
			placement = append(placement, node)
		}
		s.Jobs = append(s.Jobs, job(fmt.Sprintf("run-%03d", i), "alice", "v100", v1alpha1.PhaseRunning, 1, 8, 1, placement...))
	}
	for i := range 3 {
		s.Nodes = append(s.Nodes, ui.Node{Name: fmt.Sprintf("k-%d", i), GPUType: "k80", GPUs: 8})
	}
	for i := range 250 {
		w := job(fmt.Sprintf("wait-%03d", i), "bob", "v100", v1alpha1.PhaseWaiting, 1, 0, 1)
		w.Status.SubmitTime = at(i)
		s.Jobs = append(s.Jobs, w)
	}
	return s
}

func TestClusterPages(t *testing.T) {
	all := ui.Cluster(bigState())
	first := ui.ClusterPage(all, "", 1)
	if len(first) != 2 || first[0].GPUType != "k80" || first[1].GPUType != "v100" {
		t.Fatalf("types %+v", first)
	}
	k80, v100 := first[0], first[1]
	if len(k80.Nodes) != 3 || k80.Pager != (ui.Pager{Page: 1, Pages: 1, From: 1, To: 3, Total: 3}) {
		t.Errorf("k80: %d nodes, pager %+v", len(k80.Nodes), k80.Pager)
	}
	want := ui.Pager{Page: 1, Pages: 3, From: 1, To: 64, Total: 150, Next: "?gpuType=v100&page=2"}
	if len(v100.Nodes) != 64 || v100.Nodes[0].Name != "v-000" || v100.Pager != want {
		t.Errorf("v100 page 1: %d nodes from %s, pager %+v; want %+v", len(v100.Nodes), v100.Nodes[0].Name, v100.Pager, want)
	}
	// The key holds the jobs on the page's nodes; the summary every GPU.
	if len(v100.Holders) != 64 || v100.Holders[63].Job != "run-063" || v100.Free != 0 || v100.Waiting != 250 {
		t.Errorf("v100 page 1: %d holders, last %+v, %d free, %d waiting", len(v100.Holders), v100.Holders[len(v100.Holders)-1], v100.Free, v100.Waiting)
	}
	last := ui.ClusterPage(all, "v100", 3)
	want = ui.Pager{Page: 3, Pages: 3, From: 129, To: 150, Total: 150, Prev: "?gpuType=v100&page=2"}
	if len(last) != 1 || len(last[0].Nodes) != 22 || last[0].Nodes[0].Name != "v-128" || last[0].Pager != want || last[0].Holders[0].Job != "run-128" {
		t.Errorf("v100 page 3: %+v", last[0].Pager)
	}
	past := ui.ClusterPage(all, "v100", 9)
	if len(past[0].Nodes) != 0 || past[0].Pager.From != 0 || past[0].Pager.Prev != "?gpuType=v100&page=3" || past[0].Pager.Next != "" {
		t.Errorf("v100 page 9: %d nodes, pager %+v", len(past[0].Nodes), past[0].Pager)
	}
	if got := ui.ClusterPage(all, "p100", 1); len(got) != 0 {
		t.Errorf("a type without nodes or jobs: %+v", got)
	}
}

func TestQueuePages(t *testing.T) {
	v := ui.Queue(bigState(), ui.QueueFilter{Phase: "Waiting", User: "bob"})
	v.Paginate(2)
	want := ui.Pager{Page: 2, Pages: 3, From: 101, To: 200, Total: 250, Prev: "?page=1&phase=Waiting&user=bob", Next: "?page=3&phase=Waiting&user=bob"}
	if len(v.Entries) != 100 || v.Entries[0].Position != 101 || v.Entries[99].Job.Name != "wait-199" || v.Pager != want {
		t.Fatalf("page 2: %d entries from position %d, pager %+v; want %+v", len(v.Entries), v.Entries[0].Position, v.Pager, want)
	}
	var b bytes.Buffer
	if err := ui.Render(&b, ui.Page{Page: "queue", Title: "Queue", Viewer: ui.Viewer{Name: "root", Admin: true}, Data: v}, true); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, s := range []string{`data-pager data-page="2" data-pages="3" data-total="250"`, `href="?page=1&amp;phase=Waiting&amp;user=bob" rel="prev"`, `href="?page=3&amp;phase=Waiting&amp;user=bob" rel="next"`, "101–200 of 250"} {
		if !strings.Contains(html, s) {
			t.Errorf("queue page 2 lacks %s: %s", s, html[strings.Index(html, "data-pager"):][:300])
		}
	}
	if n := strings.Count(html, `data-job="wait-`); n != 100 {
		t.Errorf("%d rows rendered, want 100", n)
	}
	// One page: no pager.
	small := ui.Queue(state(ui.Viewer{Name: "alice"}), ui.QueueFilter{})
	small.Paginate(1)
	b.Reset()
	if err := ui.Render(&b, ui.Page{Page: "queue", Title: "Queue", Viewer: ui.Viewer{Name: "alice"}, Data: small}, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "data-pager") {
		t.Error("a pager on a queue of one page")
	}
}

// scaleState is docs/scale.md's cluster: 5 000 jobs of 1 to 8 workers on
// 1 000 nodes × 8 GPUs of 3 types, the first that fit running.
func scaleState() ui.State {
	s := ui.State{Now: t0, Viewer: ui.Viewer{Name: "root", Admin: true}, Schedulers: map[string]rest.Scheduler{}}
	types := []string{"a", "b", "c"}
	free := map[string][]int{}
	for _, t := range types {
		s.Schedulers[t] = rest.Scheduler{GPUType: t, Algorithm: "HeSRPT", GPUs: 8 * 1000 / 3}
	}
	for i := range 1000 {
		t := types[i%3]
		s.Nodes = append(s.Nodes, ui.Node{Name: fmt.Sprintf("node-%04d", i), GPUType: t, GPUs: 8})
		free[t] = append(free[t], 8)
	}
	for i := range 5000 {
		t, n := types[i%3], i%8+1
		tj := job(fmt.Sprintf("job-%04d", i), fmt.Sprintf("user-%d", i%20), t, v1alpha1.PhaseWaiting, 1, 0, 1)
		tj.Status.SubmitTime = at(i)
		var placement []string
		for j, f := range free[t] {
			for ; f > 0 && len(placement) < n; f-- {
				placement = append(placement, fmt.Sprintf("node-%04d", j*3+i%3))
			}
			free[t][j] = f
			if len(placement) == n {
				break
			}
		}
		if len(placement) == n {
			tj.Status.Phase, tj.Status.Workers, tj.Status.Placement = v1alpha1.PhaseRunning, int32(n), placement
		}
		s.Jobs = append(s.Jobs, tj)
	}
	return s
}

// BenchmarkPagesAtScale builds and renders the cluster page, the queue
// page and a waiting job's page at 5 000 jobs on 1 000 nodes, as the
// server does once it has read the cluster.
func BenchmarkPagesAtScale(b *testing.B) {
	s := scaleState()
	viewer := ui.Viewer{Name: "root", Admin: true}
	render := func(b *testing.B, name string, data any) int {
		var out bytes.Buffer
		if err := ui.Render(&out, ui.Page{Page: name, Title: name, Viewer: viewer, Data: data}, false); err != nil {
			b.Fatal(err)
		}
		return out.Len()
	}
	b.Run("cluster", func(b *testing.B) {
		for b.Loop() {
			b.SetBytes(int64(render(b, "cluster", ui.ClusterPage(ui.Cluster(s), "", 1))))
		}
	})
	b.Run("queue", func(b *testing.B) {
		for b.Loop() {
			v := ui.Queue(s, ui.QueueFilter{})
			v.Paginate(1)
			b.SetBytes(int64(render(b, "queue", v)))
		}
	})
	b.Run("job", func(b *testing.B) {
		tj := &s.Jobs[len(s.Jobs)-1]
		for b.Loop() {
			b.SetBytes(int64(render(b, "job", ui.Job(s, tj, nil, "spec: {}"))))
		}
	})
}
