package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// The failover mode (FAILOVER=1): two controller replicas under leader
// election while JOBS MPIJob TrainingJobs arrive, ARRIVE a second, each
// running 1 to 5 minutes in kwok (its launcher ends Succeeded). Every
// KILL_EVERY seconds, KILLS times, the leader is killed with SIGKILL and
// started again at once, as a Deployment would. It reports the time from
// each kill to the new leader's takeover and to its first scheduling round,
// and checks, once every job has ended or WAIT minutes (120) after the last
// arrival, that every job completed, that none was started twice (one
// Started Event) and that no node was ever planned for more GPUs than it
// has (sampled every second from the jobs' statuses) or had more bound
// than it has (from the pods).

// replica is one controller process of the failover mode.
type replica struct {
	name                 string
	metricsAddr, apiAddr string
	cmd                  *exec.Cmd
	// exited is closed once cmd has ended.
	exited chan struct{}
}

func (r *replica) start(bin string, args []string, logDir string) error {
	logf, err := os.OpenFile(filepath.Join(logDir, r.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	// Each replica serves its REST API and metrics on ports of its own,
	// as pods of a Deployment would.
	r.cmd = exec.Command(bin, append(args, "--metrics-addr", r.metricsAddr, "--api-addr", r.apiAddr)...)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.exited = make(chan struct{})
	go func(cmd *exec.Cmd, f *os.File, done chan struct{}) { _ = cmd.Wait(); f.Close(); close(done) }(r.cmd, logf, r.exited)
	return nil
}

// leads says whether the replica holds the Lease, by its own metrics.
func (r *replica) leads() bool {
	m, err := scrape(r.metricsAddr)
	return err == nil && m[`leader_election_master_status{name="voda-controller"}`] == 1
}

// rounds is how many scheduling rounds the replica has run, by its metrics.
func (r *replica) rounds() float64 {
	m, err := scrape(r.metricsAddr)
	if err != nil {
		return 0
	}
	n := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "voda_scheduler_reschedule_duration_seconds_count") {
			n += v
		}
	}
	return n
}

// eventLog is every Event of Voda's seen during a run, by UID. The API
// server deletes an Event an hour after its last update (--event-ttl), and
// a run lasts longer: they are listed every two minutes, not only at the
// end.
type eventLog struct {
	mu   sync.Mutex
	seen map[types.UID]seenEvent
}

// seenEvent is what the checks read of an Event: its reason, its
// TrainingJob and how many times it happened.
type seenEvent struct {
	reason, job string
	count       int
}

func (l *eventLog) poll(ctx context.Context, c client.Client, ns string) error {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range events.Items {
		if e.Source.Component != "voda-scheduler" {
			continue
		}
		n := int(max(e.Count, 1))
		if prev, ok := l.seen[e.UID]; !ok || n > prev.count {
			l.seen[e.UID] = seenEvent{reason: e.Reason, job: e.InvolvedObject.Name, count: n}
		}
	}
	return nil
}

// overcommit is the worst a sample saw: the most GPUs planned onto, and
// bound on, one node.
type overcommit struct {
	mu                   sync.Mutex
	samples              int
	planned, bound       int
	plannedAt, boundAt   string
	plannedBad, boundBad int
	// begin is the run's start, for the lines that name each over-planned
	// node's jobs (the first 20) as they are seen.
	begin time.Time
}

func (o *overcommit) sample(ctx context.Context, c client.Client, ns string, gpus int) {
	var tjs v1alpha1.TrainingJobList
	if err := c.List(ctx, &tjs, client.InNamespace(ns)); err != nil {
		return
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{v1alpha1.JobLabel}); err != nil {
		return
	}
	planned, bound := map[string]int{}, map[string]int{}
	on := map[string][]string{} // node → the jobs planned there, with their phase and workers there
	for _, tj := range tjs.Items {
		if tj.Status.Phase == v1alpha1.PhaseRunning || tj.Status.Phase == v1alpha1.PhaseStarting {
			here := map[string]int{}
			for _, n := range tj.Status.Placement {
				planned[n] += max(int(tj.Status.GPUsPerWorker), 1)
				here[n]++
			}
			written := "?"
			if at := tj.Status.AccountedTime; at != nil {
				written = at.Format(time.TimeOnly)
			}
			for n, k := range here {
				on[n] = append(on[n], fmt.Sprintf("%s %s ×%d (status of %s)", tj.Name, tj.Status.Phase, k, written))
			}
		}
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed ||
			!strings.Contains(p.Name, "-worker-") {
			continue
		}
		bound[p.Spec.NodeName]++ // one GPU a worker (K is 1 in this mode)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.samples++
	worst := func(m map[string]int, most *int, at *string, bad *int) {
		over := false
		for n, v := range m {
			if v > *most {
				*most, *at = v, n
			}
			over = over || v > gpus
		}
		if over {
			*bad++
		}
	}
	for n, v := range planned {
		if v > gpus && o.plannedBad < 20 {
			fmt.Printf("+%s node %s planned for %d GPUs: %s\n", time.Since(o.begin).Round(time.Second), n, v, strings.Join(on[n], ", "))
		}
	}
	worst(planned, &o.planned, &o.plannedAt, &o.plannedBad)
	worst(bound, &o.bound, &o.boundAt, &o.boundBad)
}

func failover(ctx context.Context, env *testenv.Env, bin, dir, ns string, jobs, nodes, gpus int, gpuTypes []string) error {
	kills, every, arrive := envInt("KILLS", 10), time.Duration(envInt("KILL_EVERY", 90))*time.Second, envInt("ARRIVE", 2)
	args := []string{"controller", "--kubeconfig", env.Kubeconfig, "--leader-elect=true", "--leader-elect-namespace", ns,
		"--health-addr", "0", "--rate-limit", "1s"}
	args = append(args, strings.Fields(os.Getenv("ARGS"))...)
	var reps []*replica
	for i := range 2 {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		api, err := freeAddr()
		if err != nil {
			return err
		}
		r := &replica{name: fmt.Sprintf("controller-%d", i), metricsAddr: addr, apiAddr: api}
		if err := r.start(bin, args, dir); err != nil {
			return err
		}
		defer func() { _ = r.cmd.Process.Kill() }()
		reps = append(reps, r)
	}
	cfg := *env.Config
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(&cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return err
	}
	oc := overcommit{begin: time.Now()}
	events := eventLog{seen: map[types.UID]seenEvent{}}
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	go func() {
		for sctx.Err() == nil {
			oc.sample(sctx, c, ns, gpus)
			time.Sleep(time.Second)
		}
	}()
	go func() {
		for sctx.Err() == nil {
			if err := events.poll(sctx, c, ns); err != nil && sctx.Err() == nil {
				fmt.Printf("list Events: %v\n", err)
			}
			time.Sleep(2 * time.Minute)
		}
	}()

	begin := time.Now()
	created := make(chan error, 1)
	go func() {
		for i := range jobs {
			tj := job(ns, fmt.Sprintf("job-%04d", i), int32(i%8+1), 1, "mpi", gpuTypes[i%len(gpuTypes)])
			run := time.Duration(60+(i*37)%240) * time.Second
			tj.Spec.Template.MPIJob.Launcher.Annotations = map[string]string{testenv.CompleteAfterAnnotation: run.String()}
			if err := c.Create(ctx, tj); err != nil {
				created <- err
				return
			}
			time.Sleep(time.Second / time.Duration(arrive))
		}
		created <- nil
	}()

	type kill struct {
		at                time.Time
		victim, successor string
		takeover, round   time.Duration
	}
	var done []kill
	time.Sleep(time.Minute)
	for k := range kills {
		var leader *replica
		for wait := time.Now(); leader == nil && time.Since(wait) < 2*time.Minute; time.Sleep(200 * time.Millisecond) {
			for _, r := range reps {
				if r.leads() {
					leader = r
				}
			}
		}
		if leader == nil {
			return fmt.Errorf("kill %d: no replica leads", k+1)
		}
		for _, r := range reps {
			select {
			case <-r.exited:
				return fmt.Errorf("kill %d: %s exited on its own (%s); see its log in %s", k+1, r.name, r.cmd.ProcessState, dir)
			default:
			}
		}
		at := time.Now()
		if err := leader.cmd.Process.Kill(); err != nil {
			return err
		}
		if err := leader.start(bin, args, dir); err != nil { // the Deployment's new pod
			return err
		}
		kl := kill{at: at, victim: leader.name}
		for time.Since(at) < 5*time.Minute && (kl.takeover == 0 || kl.round == 0) {
			time.Sleep(100 * time.Millisecond)
			for _, r := range reps {
				if kl.takeover == 0 && r.leads() {
					kl.takeover, kl.successor = time.Since(at), r.name
				}
				if kl.takeover != 0 && r.name == kl.successor && kl.round == 0 && r.rounds() > 0 {
					kl.round = time.Since(at)
				}
			}
		}
		done = append(done, kl)
		fmt.Printf("+%s kill %d of %s: %s took over after %s, its first round %s after the kill\n",
			at.Sub(begin).Round(time.Second), k+1, kl.victim, kl.successor, kl.takeover.Round(100*time.Millisecond), kl.round.Round(100*time.Millisecond))
		time.Sleep(every - time.Since(at))
	}
	if err := <-created; err != nil {
		return err
	}
	fmt.Printf("created %d jobs over %s; waiting for them to complete\n", jobs, time.Since(begin).Round(time.Second))
	deadline := time.Now().Add(time.Duration(envInt("WAIT", 120)) * time.Minute)
	var tjs v1alpha1.TrainingJobList
	for time.Now().Before(deadline) {
		if err := c.List(ctx, &tjs, client.InNamespace(ns)); err != nil {
			return err
		}
		left := slices.IndexFunc(tjs.Items, func(tj v1alpha1.TrainingJob) bool { return !tj.Status.Phase.Final() }) >= 0
		if !left {
			break
		}
		time.Sleep(5 * time.Second)
	}
	stopSampling()
	end := time.Since(begin)
	phases := map[v1alpha1.Phase]int{}
	for _, tj := range tjs.Items {
		phases[tj.Status.Phase]++
	}
	if err := events.poll(ctx, c, ns); err != nil {
		return err
	}
	started := map[string]int{}
	reasons := map[string]int{}
	events.mu.Lock()
	for _, e := range events.seen {
		reasons[e.reason] += e.count
		if e.reason == "Started" {
			started[e.job] += e.count
		}
	}
	events.mu.Unlock()
	twice := 0
	for _, n := range started {
		if n > 1 {
			twice++
		}
	}
	var takeovers, firstRounds []float64
	for _, k := range done {
		takeovers = append(takeovers, k.takeover.Seconds())
		firstRounds = append(firstRounds, k.round.Seconds())
	}
	slices.Sort(takeovers)
	slices.Sort(firstRounds)
	fmt.Printf("%d jobs in %s: %v; %d with a Started Event, %d started more than once\n", len(tjs.Items), end.Round(time.Second), phases, len(started), twice)
	fmt.Printf("Voda's Events: %v\n", reasons)
	fmt.Printf("%d kills: takeover after p50 %.1f s, max %.1f s; first round of the new leader p50 %.1f s, max %.1f s after the kill\n",
		len(done), pct(takeovers, 50), pct(takeovers, 100), pct(firstRounds, 50), pct(firstRounds, 100))
	oc.mu.Lock()
	fmt.Printf("GPUs per node over %d samples (%d GPUs a node): planned at most %d (%s), in %d samples over; bound at most %d (%s), in %d samples over\n",
		oc.samples, gpus, oc.planned, oc.plannedAt, oc.plannedBad, oc.bound, oc.boundAt, oc.boundBad)
	oc.mu.Unlock()
	return nil
}
