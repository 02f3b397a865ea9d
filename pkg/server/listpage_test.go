package server_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/client"
)

// testListPages: the job list comes in pages of at most limit jobs, in name
// order; following continue gives every job that passes the filters once,
// whatever the page size, also when the filters leave most jobs out; bad
// limits and tokens get a 400.
func testListPages(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	var made []*v1alpha1.TrainingJob
	for i := range 11 {
		user := []string{"alice", "bob", "bob"}[i%3]
		tj := &v1alpha1.TrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: apiNS, Name: fmt.Sprintf("page-%02d", i)},
			Spec: v1alpha1.TrainingJobSpec{GPUType: "pages-gpu", MinWorkers: 1, MaxWorkers: 1, Submitter: user,
				Template: v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{
					Launcher: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "l", Image: "busybox"}}}},
					Worker:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "busybox"}}}},
				}}}}
		if err := e.k8s.Create(ctx, tj); err != nil {
			t.Fatal(err)
		}
		made = append(made, tj)
	}
	t.Cleanup(func() {
		for _, tj := range made {
			_ = e.k8s.Delete(ctx, tj, ctrlclient.PropagationPolicy(metav1.DeletePropagationBackground))
		}
	})
	names := func(l []v1alpha1.TrainingJob) []string {
		var out []string
		for _, tj := range l {
			out = append(out, tj.Name)
		}
		return out
	}
	for _, c := range []struct {
		user   string
		filter client.JobFilter
		limit  int
	}{
		{"root", client.JobFilter{}, 1},
		{"root", client.JobFilter{}, 4},
		{"root", client.JobFilter{User: "alice"}, 2}, // most of each API page filtered out
		{"alice", client.JobFilter{}, 3},
		{"bob", client.JobFilter{GPUType: "pages-gpu"}, 5},
		{"root", client.JobFilter{User: "nobody"}, 2},
	} {
		cl := e.client(t, c.user)
		whole, err := cl.ListJobsPage(ctx, c.filter, 1000, "")
		if err != nil || whole.Continue != "" {
			t.Fatalf("%s %+v: one page of 1000: continue %q, %v", c.user, c.filter, whole.Continue, err)
		}
		var got []string
		pages := 0
		for cont := ""; ; pages++ {
			p, err := cl.ListJobsPage(ctx, c.filter, c.limit, cont)
			if err != nil {
				t.Fatalf("%s %+v limit %d: page %d: %v", c.user, c.filter, c.limit, pages, err)
			}
			if len(p.Items) > c.limit {
				t.Errorf("%s %+v: a page of %d jobs over limit %d", c.user, c.filter, len(p.Items), c.limit)
			}
			got = append(got, names(p.Items)...)
			if cont = p.Continue; cont == "" {
				break
			}
		}
		want := names(whole.Items)
		if !slices.Equal(got, want) || !slices.IsSorted(got) {
			t.Errorf("%s %+v limit %d: %d pages gave %v, want %v", c.user, c.filter, c.limit, pages+1, got, want)
		}
		for _, n := range got {
			i := slices.IndexFunc(made, func(tj *v1alpha1.TrainingJob) bool { return tj.Name == n })
			if c.user != "root" && i >= 0 && made[i].Spec.Submitter != c.user {
				t.Errorf("%s sees %s of %s", c.user, n, made[i].Spec.Submitter)
			}
		}
		if c.filter.User == "alice" && len(got) != 4 {
			t.Errorf("alice's pages jobs: %v, want page-00, -03, -06, -09", got)
		}
		all, err := cl.ListJobs(ctx, c.filter)
		if err != nil || !slices.Equal(names(all), want) {
			t.Errorf("%s %+v: ListJobs %v, %v; want %v", c.user, c.filter, names(all), err, want)
		}
	}
	first, err := e.client(t, "root").ListJobsPage(ctx, client.JobFilter{}, 2, "")
	if err != nil || first.Continue == "" {
		t.Fatalf("first page of 2: %v, continue %q", err, first.Continue)
	}
	for _, c := range []struct{ query, want string }{
		{"limit=0", `limit "0": want a number of jobs from 1 to 1000 (default 500)`},
		{"limit=1001", `limit "1001": want a number of jobs from 1 to 1000`},
		{"limit=ten", `limit "ten"`},
		{"continue=bm90IGEgdG9rZW4", "is not a token this API gave out: list again without it"},
		{"continue=" + url.QueryEscape(first.Continue+"x"), "is not a token this API gave out"},
		{"continue=%25%25", "is not a token this API gave out"},
	} {
		if code, msg := e.call(t, "GET", "/api/v1/jobs?"+c.query, "root", "", ""); code != 400 || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want 400 %q", c.query, code, msg, c.want)
		}
	}
}

// testListFromCache: the controller's API (the HTTPS server here) reads
// the list from the controller's cache. A job created or deleted through
// it is in (or out of) the very next list; pages continue by name and
// together give the whole list whatever their size; a token of the other
// kind of list gets a 400.
func testListFromCache(t *testing.T, e *apiEnv) {
	ctx := context.Background()
	_, cl := e.serviceAccount(t, "lister")
	names := func(l []v1alpha1.TrainingJob) []string {
		var out []string
		for _, tj := range l {
			out = append(out, tj.Name)
		}
		return out
	}
	me := client.JobFilter{User: "system:serviceaccount:" + apiNS + ":lister"}
	var made []string
	t.Cleanup(func() {
		for _, n := range made {
			_ = cl.DeleteJob(ctx, n)
		}
	})
	for i := range 7 {
		n := fmt.Sprintf("cached-%02d", i)
		if _, err := cl.CreateJob(ctx, []byte(tj(n))); err != nil {
			t.Fatal(err)
		}
		made = append(made, n)
		l, err := cl.ListJobs(ctx, me)
		if err != nil || !slices.Equal(names(l), made) {
			t.Fatalf("right after creating %s the list has %v (%v), want %v", n, names(l), err, made)
		}
	}
	// Other tests' jobs may be going away meanwhile: the pages are checked
	// on this test's own.
	whole, err := cl.ListJobsPage(ctx, client.JobFilter{}, 1000, "")
	if err != nil || whole.Continue != "" || !slices.IsSorted(names(whole.Items)) {
		t.Fatalf("one page of 1000: %v, continue %q, %v", names(whole.Items), whole.Continue, err)
	}
	for _, c := range []struct {
		filter client.JobFilter
		limit  int
		want   []string
	}{
		{me, 1, made},
		{me, 2, made},
		{me, 3, made},
		{client.JobFilter{User: "nobody"}, 2, nil},
	} {
		var got []string
		pages := 0
		for cont := ""; ; pages++ {
			p, err := cl.ListJobsPage(ctx, c.filter, c.limit, cont)
			if err != nil {
				t.Fatalf("%+v limit %d: page %d: %v", c.filter, c.limit, pages, err)
			}
			if len(p.Items) > c.limit || len(p.Items) == 0 && p.Continue != "" {
				t.Errorf("%+v: a page of %d jobs (limit %d), continue %q", c.filter, len(p.Items), c.limit, p.Continue)
			}
			got = append(got, names(p.Items)...)
			if cont = p.Continue; cont == "" || len(got) > len(c.want) {
				break
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v limit %d: %d pages gave %v, want %v", c.filter, c.limit, pages+1, got, c.want)
		}
	}
	// Tokens of one kind of list mean nothing to the other.
	cached, err := cl.ListJobsPage(ctx, me, 2, "")
	if err != nil || cached.Continue == "" {
		t.Fatalf("first cached page of 2: %v, continue %q", err, cached.Continue)
	}
	direct, err := e.client(t, "root").ListJobsPage(ctx, client.JobFilter{}, 1, "")
	if err != nil || direct.Continue == "" {
		t.Fatalf("first direct page of 1: %v, continue %q", err, direct.Continue)
	}
	if _, err := cl.ListJobsPage(ctx, me, 2, direct.Continue); err == nil || !strings.Contains(err.Error(), "not one this API gives out") {
		t.Errorf("the API server's token given to the cached list: %v", err)
	}
	if _, err := e.client(t, "root").ListJobsPage(ctx, client.JobFilter{}, 2, cached.Continue); err == nil || !strings.Contains(err.Error(), "not one this API gives out") {
		t.Errorf("the cached list's token given to the direct one: %v", err)
	}
	// Deleted: gone from the next list.
	if err := cl.DeleteJob(ctx, made[3]); err != nil {
		t.Fatal(err)
	}
	want := slices.Delete(slices.Clone(made), 3, 4)
	if l, err := cl.ListJobs(ctx, me); err != nil || !slices.Equal(names(l), want) {
		t.Errorf("right after deleting %s the list has %v (%v), want %v", made[3], names(l), err, want)
	}
}
