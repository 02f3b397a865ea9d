// Command kubebench measures the controller end to end on the local control
// plane: it starts internal/testenv with NODES kwok nodes of GPUS GPUs, runs
// `voda controller` as a separate process, creates JOBS TrainingJobs of 1 to
// 8 workers (min 1, max and requested cycling 1…8) as fast as the API server
// takes them, and reports how long each job took from creation until every
// worker of its allocation was Running on its node, the actions per second,
// and the controller's CPU time and peak memory (from /proc).
//
// RUNTIME=pytorch runs the jobs as PyTorchJobs (training-operator) instead
// of MPIJobs (mpi-operator); K makes every worker hold K GPUs.
//
//	go run ./hack/kubebench                 # 200 jobs, 32 nodes × 8 GPUs, 1 s rate limit
//	RUNTIME=pytorch go run ./hack/kubebench
//	K=8 go run ./hack/kubebench             # workers of 8 GPUs: whole nodes
//	JOBS=50 NODES=8 go run ./hack/kubebench
//	ARGS="--write-concurrency=1" go run ./hack/kubebench
//
// It also reports Voda's requests and the writes the API server served from
// every client, by kind. COMPONENT_QPS sets the client rate of
// kube-scheduler and the operators (testenv.Options.ComponentQPS);
// TIMELINE=FILE writes every job's times (creation, child, each pod's
// conditions, Events) to FILE.
//
// SCALE=1 is the scale mode: 5 000 jobs on 1 000 nodes × 8 GPUs of 3 GPU
// types (TYPES), MPIJobs and PyTorchJobs in turn (RUNTIME=mix), with the
// controller's REST API, dashboard and metrics served; it also reports
// Voda's requests to the API server (all, writes, the most writes per
// second over any 10 s), the scheduling rounds' length per GPU type, and
// the server time of the REST job list and each dashboard page
// (docs/scale.md).
//
//	SCALE=1 go run ./hack/kubebench
//
// FAILOVER=1 is the failover mode: two controller replicas under leader
// election, 1 000 MPIJob TrainingJobs arriving two a second on 100 nodes and
// completing after 1 to 5 minutes, the leader killed with SIGKILL ten times
// (KILLS, every KILL_EVERY seconds); it reports each takeover and checks
// that every job completes once and no node is over-committed
// (docs/scale.md).
//
//	FAILOVER=1 go run ./hack/kubebench
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

const gpuType = "bench-gpu"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kubebench:", err)
		os.Exit(1)
	}
}

func run() error {
	scale := os.Getenv("SCALE") != ""
	jobs, nodes, gpus, types := envInt("JOBS", 200), envInt("NODES", 32), envInt("GPUS", 8), envInt("TYPES", 1)
	runtime := os.Getenv("RUNTIME")
	failingOver := os.Getenv("FAILOVER") != ""
	switch {
	case scale:
		jobs, nodes, types = envInt("JOBS", 5000), envInt("NODES", 1000), envInt("TYPES", 3)
		if runtime == "" {
			runtime = "mix"
		}
	case failingOver:
		jobs, nodes = envInt("JOBS", 1000), envInt("NODES", 100)
	}
	k := int32(envInt("K", 1))
	switch runtime {
	case "":
		runtime = "mpi"
	case "mpi", "pytorch", "mix":
	default:
		return fmt.Errorf("RUNTIME=%q: want mpi, pytorch or mix", runtime)
	}
	if types > 26 || nodes < types {
		return fmt.Errorf("TYPES=%d: want 1 to 26, and at most NODES", types)
	}
	gpuTypes := []string{gpuType}
	if types > 1 {
		gpuTypes = nil
		for i := range types {
			gpuTypes = append(gpuTypes, gpuType+"-"+string(rune('a'+i)))
		}
	}
	rate := os.Getenv("RATE_LIMIT")
	if rate == "" {
		rate = "1s"
	}
	dir, err := os.MkdirTemp("", "voda-kubebench-")
	if err != nil {
		return err
	}
	if os.Getenv("KEEP") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Println("logs in", dir)
	}
	ctx := context.Background()

	bin := filepath.Join(dir, "voda")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/voda").CombinedOutput(); err != nil {
		return fmt.Errorf("build voda: %v\n%s", err, out)
	}
	env, err := testenv.Start(ctx, testenv.Options{Dir: dir, ComponentQPS: envInt("COMPONENT_QPS", 0)})
	if err != nil {
		return err
	}
	defer env.Stop()
	for i, t := range gpuTypes {
		count := nodes / types
		if i < nodes%types {
			count++
		}
		if _, err := env.CreateGPUNodes(ctx, testenv.NodeSpec{GPUType: t, Count: count, GPUs: gpus}); err != nil {
			return err
		}
	}
	const ns = "bench"
	if err := env.CreateNamespace(ctx, ns); err != nil {
		return err
	}
	if failingOver {
		return failover(ctx, env, bin, dir, ns, jobs, nodes, gpus, gpuTypes)
	}
	logf, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		return err
	}
	args := []string{"controller", "--kubeconfig", env.Kubeconfig, "--leader-elect=false",
		"--metrics-addr", "0", "--health-addr", "0", "--rate-limit", rate}
	var api, metricsAddr, pprofAddr string
	if scale {
		more, a, m, p, err := scaleArgs(dir, ns)
		if err != nil {
			return err
		}
		args, api, metricsAddr, pprofAddr = append(args, more...), a, m, p
	} else {
		if metricsAddr, err = freeAddr(); err != nil {
			return err
		}
		args = append(args, "--metrics-addr", metricsAddr)
	}
	args = append(args, strings.Fields(os.Getenv("ARGS"))...)
	ctl := exec.Command(bin, args...)
	ctl.Stdout, ctl.Stderr = logf, logf
	if err := ctl.Start(); err != nil {
		return err
	}
	defer func() { _ = ctl.Process.Kill(); _ = ctl.Wait() }()

	cfg := *env.Config
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(&cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return err
	}
	// Voda's requests, and every client's writes, over the run.
	var reqs requestLog
	waitMetrics(metricsAddr)
	reqs.sample(metricsAddr)
	writesBefore, err := serverWrites(ctx, env)
	if err != nil {
		return err
	}
	created := map[string]time.Time{}
	begin := time.Now()
	for i := range jobs {
		n := int32(i%8 + 1)
		rt := runtime
		if rt == "mix" {
			rt = []string{"mpi", "pytorch"}[i%2]
		}
		tj := job(ns, fmt.Sprintf("job-%03d", i), n, k, rt, gpuTypes[i%len(gpuTypes)])
		if err := c.Create(ctx, tj); err != nil {
			return err
		}
		created[tj.Name] = time.Now()
	}
	fmt.Printf("created %d TrainingJobs (%s, %d GPU(s) per worker) in %s\n", jobs, runtime, k, time.Since(begin).Round(time.Millisecond))

	seen := map[string]*state{}
	// At scale the observer lists thousands of objects: less often, and
	// the plan counts as carried out after longer without change.
	poll, quiet, limit := 200*time.Millisecond, 5*time.Second, 10*time.Minute
	if scale {
		poll, quiet, limit = 2*time.Second, 30*time.Second, 60*time.Minute
	}
	deadline := time.Now().Add(limit)
	stable := time.Time{}
	pageJobs := []string{"job-000", fmt.Sprintf("job-%03d", jobs-1)}
	lastPages := time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(poll)
		if scale {
			reqs.sample(metricsAddr)
			if time.Since(lastPages) > 10*time.Minute {
				// The pages while the jobs still start, not only once
				// everything has settled.
				lastPages = time.Now()
				_, rss := procStats(ctl.Process.Pid)
				fmt.Printf("+%s: %d jobs running; controller RSS %.1f MiB\n", time.Since(begin).Round(time.Second), countOK(seen), rss)
				timePages(ctx, api, gpuTypes[0], pageJobs)
			}
		}
		changed, err := observe(ctx, c, ns, seen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "observe:", err)
			continue
		}
		// Done once every job given GPUs runs them all; with workers of
		// several GPUs not every job fits at once, and the others wait.
		done := len(seen) > 0
		for _, st := range seen {
			done = done && !st.first.IsZero()
			done = done && st.ok
		}
		switch {
		case !done || changed:
			stable = time.Time{}
		case stable.IsZero():
			stable = time.Now()
		case time.Since(stable) > quiet:
			deadline = time.Now() // nothing moved for a while: the plan is carried out
		}
	}
	all := stable.Sub(begin)
	cpu, peak := procStats(ctl.Process.Pid)
	reqs.sample(metricsAddr)
	writesAfter, werr := serverWrites(ctx, env)
	// Throughput to Running: the jobs whose workers all ran, over the time
	// from the first creation to the last of them running.
	var lastRunning time.Duration
	for _, st := range seen {
		if !st.first.IsZero() {
			lastRunning = max(lastRunning, st.first.Sub(begin))
		}
	}

	var decided, first, last []float64
	gpusUsed := 0
	for name, st := range seen {
		decided = append(decided, st.decided.Sub(created[name]).Seconds())
		// A job whose workers never all ran has no such times.
		if !st.first.IsZero() {
			first = append(first, st.first.Sub(created[name]).Seconds())
		}
		if !st.last.IsZero() {
			last = append(last, st.last.Sub(created[name]).Seconds())
		}
		gpusUsed += st.workers
	}
	slices.Sort(decided)
	slices.Sort(first)
	slices.Sort(last)
	// Where the time went: when the MPIJob or PyTorchJob and the pods were
	// created, and when the scheduler bound the pods (their PodScheduled
	// condition).
	children := []schema.GroupVersionKind{kube.MPIJobGVK}
	switch runtime {
	case "pytorch":
		children = []schema.GroupVersionKind{kube.PyTorchJobGVK}
	case "mix":
		children = append(children, kube.PyTorchJobGVK)
	}
	var mpiAt, podAt, boundAt []float64
	var childKinds []string
	for _, child := range children {
		mpis := &unstructured.UnstructuredList{}
		mpis.SetGroupVersionKind(child.GroupVersion().WithKind(child.Kind + "List"))
		if err := c.List(ctx, mpis, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, m := range mpis.Items {
			mpiAt = append(mpiAt, m.GetCreationTimestamp().Sub(created[m.GetName()]).Seconds())
		}
		childKinds = append(childKinds, child.Kind)
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{v1alpha1.JobLabel}); err != nil {
		return err
	}
	for _, p := range pods.Items {
		job := p.Labels[v1alpha1.JobLabel]
		if !strings.HasPrefix(p.Name, job+"-worker-") {
			continue
		}
		podAt = append(podAt, p.CreationTimestamp.Sub(created[job]).Seconds())
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
				boundAt = append(boundAt, cond.LastTransitionTime.Sub(created[job]).Seconds())
			}
		}
	}
	if path := os.Getenv("TIMELINE"); path != "" {
		if err := writeTimeline(ctx, c, ns, path, children, seen, created, pods.Items, begin); err != nil {
			return err
		}
	}
	slices.Sort(mpiAt)
	slices.Sort(podAt)
	slices.Sort(boundAt)

	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return err
	}
	actions := 0
	for _, e := range events.Items {
		switch e.Reason {
		case "Started", "Scaled", "Preempted", "Resumed", "Migrated":
			if e.Source.Component == "voda-scheduler" {
				actions += int(max(e.Count, 1))
			}
		}
	}
	settled := "every plan carried out " + all.Round(time.Millisecond).String() + " after the first creation"
	if stable.IsZero() {
		all = time.Since(begin)
		settled = fmt.Sprintf("not settled after %s", all.Round(time.Second))
	}
	fmt.Printf("jobs given GPUs: %d of %d (the others wait) on %d of %d GPUs of %d type(s), %d with every worker Running (%d at some point); %s\n",
		len(seen), jobs, gpusUsed*int(k), nodes*gpus, len(gpuTypes), countOK(seen), len(first), settled)
	fmt.Printf("creation → status Running (the engine's decision written): p50 %.2f s, p99 %.2f s, max %.2f s\n", pct(decided, 50), pct(decided, 99), pct(decided, 100))
	fmt.Printf("creation → %s created: p50 %.2f s, p99 %.2f s; → worker pod created: p50 %.2f s, p99 %.2f s; → worker bound: p50 %.2f s, p99 %.2f s (1 s resolution)\n",
		strings.Join(childKinds, " or "), pct(mpiAt, 50), pct(mpiAt, 99), pct(podAt, 50), pct(podAt, 99), pct(boundAt, 50), pct(boundAt, 99))
	fmt.Printf("creation → first start, all workers Running (%d jobs): p50 %.2f s, p99 %.2f s, max %.2f s\n", len(first), pct(first, 50), pct(first, 99), pct(first, 100))
	fmt.Printf("creation → final allocation, all workers Running (%d jobs): p50 %.2f s, p99 %.2f s, max %.2f s\n", len(last), pct(last, 50), pct(last, 99), pct(last, 100))
	fmt.Printf("actions: %d (%.1f per second over the run)\n", actions, float64(actions)/all.Seconds())
	fmt.Printf("controller: CPU %.2f s, peak RSS %.1f MiB\n", cpu, peak)
	if lastRunning > 0 {
		fmt.Printf("throughput to Running: %d jobs in %.1f s from the first creation, %.1f jobs/s\n",
			len(first), lastRunning.Seconds(), float64(len(first))/lastRunning.Seconds())
	}
	reqs.report()
	if werr != nil {
		fmt.Println("API server metrics:", werr)
	} else if n := len(reqs.writes); n >= 2 {
		writeReport(writesBefore, writesAfter, reqs.writes[n-1]-reqs.writes[0])
	}
	if scale {
		rounds(metricsAddr)
		timePages(ctx, api, gpuTypes[0], pageJobs)
		_, rss := procStats(ctl.Process.Pid)
		fmt.Printf("controller after the pages: peak RSS %.1f MiB\n", rss)
		heap(metricsAddr, pprofAddr, dir)
	}
	return nil
}

// state is what kubebench saw of one job: whether every worker of its
// current allocation runs on its node, since when, and when that first
// happened.
type state struct {
	ok          bool
	workers     int
	decided     time.Time // first seen Running in its status
	first, last time.Time
}

// observe updates each job's state; changed reports whether any job's
// allocation or readiness changed.
func observe(ctx context.Context, c client.Client, ns string, seen map[string]*state) (changed bool, err error) {
	var tjs v1alpha1.TrainingJobList
	if err := c.List(ctx, &tjs, client.InNamespace(ns)); err != nil {
		return false, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{v1alpha1.JobLabel}); err != nil {
		return false, err
	}
	running := map[string]string{} // pod name → node
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running[p.Name] = p.Spec.NodeName
		}
	}
	now := time.Now()
	for _, tj := range tjs.Items {
		ok := tj.Status.Phase == v1alpha1.PhaseRunning && len(tj.Status.Placement) == int(tj.Status.Workers)
		for i, node := range tj.Status.Placement {
			ok = ok && running[fmt.Sprintf("%s-worker-%d", tj.Name, i)] == node
		}
		st := seen[tj.Name]
		if st == nil {
			if tj.Status.Phase != v1alpha1.PhaseRunning && tj.Status.Phase != v1alpha1.PhaseStarting {
				continue
			}
			st = &state{decided: now}
			seen[tj.Name] = st
		}
		if ok && st.first.IsZero() {
			st.first = now
		}
		if ok != st.ok || int(tj.Status.Workers) != st.workers {
			changed = true
			if ok {
				st.last = now
			}
		}
		st.ok, st.workers = ok, int(tj.Status.Workers)
	}
	return changed, nil
}

func job(ns, name string, max, k int32, runtime, gpuType string) *v1alpha1.TrainingJob {
	pod := func(c, image string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: c, Image: image}}}}
	}
	tmpl := v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{
		Launcher: pod("launcher", "horovod/horovod:0.28.1"), Worker: pod("worker", "horovod/horovod:0.28.1")}}
	if runtime == "pytorch" {
		tmpl = v1alpha1.TrainingJobTemplate{PyTorchJob: &v1alpha1.PyTorchJobTemplate{
			Worker: pod(v1alpha1.PyTorchContainer, "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime")}}
	}
	return &v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.TrainingJobSpec{GPUType: gpuType, MinWorkers: 1, MaxWorkers: max, RequestedWorkers: max,
			GPUsPerWorker: k, Template: tmpl},
	}
}

// procStats returns a process's CPU seconds and peak resident memory in MiB.
func procStats(pid int) (cpu, peakMiB float64) {
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command name: utime and stime are the 12th and
		// 13th, in clock ticks (100 per second on Linux).
		if i := strings.LastIndexByte(string(data), ')'); i > 0 {
			f := strings.Fields(string(data)[i+2:])
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				s, _ := strconv.ParseFloat(f[12], 64)
				cpu = (u + s) / 100
			}
		}
	}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				peakMiB = kb / 1024
			}
		}
	}
	return cpu, peakMiB
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// countOK is how many jobs run every worker of their allocation now.
func countOK(seen map[string]*state) int {
	n := 0
	for _, st := range seen {
		if st.ok {
			n++
		}
	}
	return n
}

// writeTimeline writes, for every job, when it was created, when kubebench
// saw its decision and all its workers running, when its child was
// created, each of its pods' creation and conditions, and every Event of
// the namespace: seconds from the first creation, one fact a line.
func writeTimeline(ctx context.Context, c client.Client, ns, path string, children []schema.GroupVersionKind,
	seen map[string]*state, created map[string]time.Time, pods []corev1.Pod, begin time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	at := func(t time.Time) string { return fmt.Sprintf("%.2f", t.Sub(begin).Seconds()) }
	for name, t := range created {
		fmt.Fprintf(f, "%s created %s\n", name, at(t))
	}
	for name, st := range seen {
		fmt.Fprintf(f, "%s decided %s", name, at(st.decided))
		if !st.first.IsZero() {
			fmt.Fprintf(f, " running %s", at(st.first))
		}
		fmt.Fprintln(f)
	}
	for _, child := range children {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(child.GroupVersion().WithKind(child.Kind + "List"))
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return errors.Join(err, f.Close())
		}
		for _, m := range l.Items {
			fmt.Fprintf(f, "%s child %s\n", m.GetName(), at(m.GetCreationTimestamp().Time))
		}
	}
	for _, p := range pods {
		fmt.Fprintf(f, "%s pod %s created %s", p.Labels[v1alpha1.JobLabel], p.Name, at(p.CreationTimestamp.Time))
		for _, cond := range p.Status.Conditions {
			fmt.Fprintf(f, " %s=%s@%s", cond.Type, cond.Status, at(cond.LastTransitionTime.Time))
		}
		fmt.Fprintln(f)
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return errors.Join(err, f.Close())
	}
	for _, e := range events.Items {
		t := e.LastTimestamp.Time
		if t.IsZero() {
			t = e.EventTime.Time
		}
		fmt.Fprintf(f, "%s event %s %s %s %s\n", e.InvolvedObject.Name, e.Source.Component, e.Reason, at(t), e.Message)
	}
	return f.Close()
}
