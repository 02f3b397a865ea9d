package kube_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/internal/testenv"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// torchrun is Debian's (python3-torch): the test runs it with Debian's own
// python3, whatever python3 comes first on PATH.
const (
	torchrunPython = "/usr/bin/python3"
	torchrunPath   = "/usr/bin/torchrun"
)

// needTorchrun skips a test without Debian's torchrun, unless
// VODA_REQUIRE_TORCH is set (CI installs python3-torch and sets it).
func needTorchrun(t *testing.T) {
	t.Helper()
	err := exec.Command(torchrunPython, "-c", "import torch.distributed.run").Run()
	if _, statErr := os.Stat(torchrunPath); err == nil && statErr == nil {
		return
	}
	if os.Getenv("VODA_REQUIRE_TORCH") != "" {
		t.Fatalf("VODA_REQUIRE_TORCH is set but %s with torch cannot run (%v): install Debian's python3-torch", torchrunPath, err)
	}
	t.Skip("no Debian torchrun (apt-get install python3-torch); set VODA_REQUIRE_TORCH=1 to make this a failure")
}

// kubelet plays the kubelet for one job's worker pods with real processes:
// a worker pod that runs on its (kwok) node gets a real torchrun, started
// with the environment the training-operator rendered into the pod; a pod
// that is deleted has its torchrun stopped with SIGTERM (SIGKILL after a
// grace period), as the kubelet does; a torchrun that ends by itself ends
// its pod with its exit code, for the operator's restart policy to judge.
//
// All pods share this machine, so the c10d endpoint (worker 0's Service)
// becomes 127.0.0.1 and torchrun's is_host, which on a cluster comes from
// matching worker 0's hostname, is set from the pod's index. One job at a
// time: every worker 0 binds the same port.
type kubelet struct {
	t         *testing.T
	k         *cluster
	ns, job   string
	workspace string // what /workspace holds: train.py and voda_progress.py
	ckpt      string // what /checkpoint is
	tmp       string // torchrun's TMPDIR

	mu    sync.Mutex
	procs map[types.UID]*process
	out   []logLine // every process's output, in arrival order
	exits []string  // torchruns that ended by themselves, in their pod's status: "worker-1: 1"
	late  []string  // torchruns that ended by themselves as their pod was deleted
}

type process struct {
	pod     string
	cmd     *exec.Cmd
	done    chan struct{}
	stopped bool // by us: its pod was deleted
	// reported: its exit is in its pod's status
	reported bool
	started  time.Time
}

type logLine struct {
	at   time.Time
	pod  string
	text string
}

func newKubelet(t *testing.T, k *cluster, ns, job string) *kubelet {
	ws := t.TempDir()
	for _, f := range []string{"../../../examples/pytorch/train.py", "../../../examples/progress/voda_progress.py"} {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(ws, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	return &kubelet{t: t, k: k, ns: ns, job: job, workspace: ws, ckpt: t.TempDir(), tmp: t.TempDir(), procs: map[types.UID]*process{}}
}

// run mirrors the pods every 100 ms until ctx ends, then stops every
// process.
func (kl *kubelet) run(ctx context.Context) {
	defer kl.stopAll()
	for ctx.Err() == nil {
		if err := kl.sync(ctx); err != nil && ctx.Err() == nil {
			kl.t.Logf("kubelet: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (kl *kubelet) sync(ctx context.Context) error {
	var pods corev1.PodList
	if err := kl.k.c.List(ctx, &pods, client.InNamespace(kl.ns), client.MatchingLabels{v1alpha1.JobLabel: kl.job}); err != nil {
		return err
	}
	live := map[types.UID]*corev1.Pod{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			live[p.UID] = p
		}
	}
	// Deleted pods first: a new worker 0 must find the old one's port free,
	// as on a cluster it would find a new address.
	kl.mu.Lock()
	var gone []*process
	for uid, p := range kl.procs {
		if _, ok := live[uid]; !ok && !p.stopped {
			p.stopped = true
			gone = append(gone, p)
			if exited(p) && !p.reported {
				// It ended before its pod's deletion reached it: its exit
				// code lands on a pod being deleted, which no restart
				// policy judges.
				kl.late = append(kl.late, fmt.Sprintf("%s: %d", p.pod, p.cmd.ProcessState.ExitCode()))
			}
		}
	}
	kl.mu.Unlock()
	for _, p := range gone {
		stop(kl.t, p)
	}
	for uid, pod := range live {
		kl.mu.Lock()
		p, known := kl.procs[uid]
		kl.mu.Unlock()
		switch {
		case !known && pod.Status.Phase == corev1.PodRunning && pod.Spec.NodeName != "":
			if err := kl.start(pod); err != nil {
				return err
			}
		case known && !p.stopped && !p.reported && exited(p):
			if err := kl.end(ctx, pod, p.cmd.ProcessState.ExitCode()); err != nil {
				return err
			}
			p.reported = true
			if err := testenv.EndGroup(p.cmd.Process.Pid, 10*time.Second); err != nil {
				return err
			}
		}
	}
	return nil
}

func exited(p *process) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// start runs a pod's torchrun with the pod's environment.
func (kl *kubelet) start(pod *corev1.Pod) error {
	idx, ok := workerIndexOf(kl.job, pod.Name)
	if !ok {
		return fmt.Errorf("pod %s is not a worker", pod.Name)
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == v1alpha1.PyTorchContainer })
	if i < 0 {
		return fmt.Errorf("pod %s has no container %q", pod.Name, v1alpha1.PyTorchContainer)
	}
	c := pod.Spec.Containers[i]
	path := func(s string) string {
		s = strings.ReplaceAll(s, "/workspace", kl.workspace)
		return strings.ReplaceAll(s, "/checkpoint", kl.ckpt)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		// torchrun's own temporary directories go with the test's.
		"TMPDIR=" + kl.tmp,
		// torch 1.13's torchrun on Python 3.11 needs these to start.
		"PET_REDIRECTS=1", "PET_TEE=1", "PYTHONUNBUFFERED=1", "OMP_NUM_THREADS=1"}
	conf := ""
	for _, e := range c.Env {
		v := path(e.Value)
		switch e.Name {
		case "PET_RDZV_ENDPOINT":
			_, port, _ := strings.Cut(v, ":")
			v = "127.0.0.1:" + port
		case "PET_RDZV_CONF":
			conf = v
			continue
		}
		env = append(env, e.Name+"="+v)
	}
	isHost := "is_host=0"
	if idx == 0 {
		isHost = "is_host=1"
	}
	if conf != "" {
		conf += ","
	}
	env = append(env, "PET_RDZV_CONF="+conf+isHost)
	if len(c.Command) != 1 || c.Command[0] != "torchrun" {
		return fmt.Errorf("pod %s runs %v, want torchrun", pod.Name, c.Command)
	}
	args := []string{torchrunPath}
	for _, a := range c.Args {
		args = append(args, path(a))
	}
	cmd := exec.Command(torchrunPython, args...)
	cmd.Env = env
	cmd.SysProcAttr = testenv.GroupSysProcAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{pod: pod.Name, cmd: cmd, done: make(chan struct{}), started: time.Now()}
	kl.mu.Lock()
	kl.procs[pod.UID] = p
	kl.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			kl.mu.Lock()
			kl.out = append(kl.out, logLine{at: time.Now(), pod: pod.Name, text: sc.Text()})
			kl.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	return nil
}

// stop ends a torchrun as the kubelet ends a deleted pod's container:
// SIGTERM to all of it, and after a grace period, or once torchrun itself
// has exited, SIGKILL to whatever of it is left.
func stop(t *testing.T, p *process) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
	}
	if err := testenv.EndGroup(p.cmd.Process.Pid, 10*time.Second); err != nil {
		t.Error(err)
	}
	<-p.done
}

func (kl *kubelet) stopAll() {
	kl.mu.Lock()
	var all []*process
	for _, p := range kl.procs {
		if !p.stopped {
			p.stopped = true
			all = append(all, p)
		}
	}
	kl.mu.Unlock()
	for _, p := range all {
		stop(kl.t, p)
	}
}

// end writes a torchrun's exit into its pod's status, as the kubelet does
// for a container of a pod that does not restart it (the operator sets
// restartPolicy Never on ExitCode workers and decides itself).
func (kl *kubelet) end(ctx context.Context, pod *corev1.Pod, code int) error {
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	pod = pod.DeepCopy()
	pod.Status.Phase = phase
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		cs.Ready, cs.State = false, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: reason, StartedAt: now, FinishedAt: now}}
	}
	if err := kl.k.c.Status().Update(ctx, pod); err != nil {
		return err // retried at the next sync, unless the pod is gone by then
	}
	kl.mu.Lock()
	kl.exits = append(kl.exits, fmt.Sprintf("%s: %d", pod.Name, code))
	kl.mu.Unlock()
	return nil
}

// lines returns the output so far.
func (kl *kubelet) lines() []logLine {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	return slices.Clone(kl.out)
}

func (kl *kubelet) exitsSoFar() []string {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	return slices.Clone(kl.exits)
}

var (
	startLine = regexp.MustCompile(`starting at epoch (\d+) with (\d+) processes \((\d+) workers\)`)
	epochLine = regexp.MustCompile(`\]:epoch (\d+): loss`)
)

// trainingAgain waits until, after since, the job started again with the
// given workers and finished an epoch that way; it returns how long after
// since that first epoch came.
func (kl *kubelet) trainingAgain(t *testing.T, since time.Time, workers int, what string) time.Duration {
	t.Helper()
	var took time.Duration
	err := testenv.PollUntil(context.Background(), 150*time.Second, what, func(context.Context) (bool, error) {
		started := false
		for _, l := range kl.lines() {
			if l.at.Before(since) {
				continue
			}
			if m := startLine.FindStringSubmatch(l.text); m != nil {
				w, _ := strconv.Atoi(m[3])
				started = w == workers
			} else if started && epochLine.MatchString(l.text) {
				took = l.at.Sub(since)
				return true, nil
			}
		}
		return false, fmt.Errorf("no epoch with %d workers yet; torchruns that exited: %v", workers, kl.exitsSoFar())
	})
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// waitCompleted waits until the job is Completed for as long as its
// epochs keep coming: how long the epochs left take depends on how loaded
// the machine is (go test runs packages side by side), so only a stall,
// no epoch for a minute, or a quarter of an hour in all, fails the test.
func (kl *kubelet) waitCompleted(t *testing.T, ns, name string) {
	t.Helper()
	const stall, most = time.Minute, 15 * time.Minute
	begun := time.Now()
	for {
		tj := kl.k.job(t, ns, name)
		if tj.Status.Phase == v1alpha1.PhaseCompleted {
			return
		}
		last := begun
		for _, l := range kl.lines() {
			if epochLine.MatchString(l.text) && l.at.After(last) {
				last = l.at
			}
		}
		switch {
		case time.Since(last) > stall:
			t.Fatalf("%s is %s (%s): no epoch for %s; torchruns that exited: %v", name, tj.Status.Phase, tj.Status.Message, stall, kl.exitsSoFar())
		case time.Since(begun) > most:
			t.Fatalf("%s is %s (%s) after %s of training", name, tj.Status.Phase, tj.Status.Message, most)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkEpochs checks the whole run's output: epochs only go forward, and
// every start resumes from the last checkpoint (the epoch after the last
// one reported, or that one, if the run stopped between writing the
// checkpoint and reporting it).
func checkEpochs(t *testing.T, lines []logLine, last int) (starts int) {
	t.Helper()
	done := 0 // epochs reported finished
	for _, l := range lines {
		if m := startLine.FindStringSubmatch(l.text); m != nil {
			e, _ := strconv.Atoi(m[1])
			if e < done || e > done+1 {
				t.Errorf("%s: started at epoch %d after epoch %d was done: not resumed from the checkpoint", l.pod, e, done)
			}
			starts++
		} else if m := epochLine.FindStringSubmatch(l.text); m != nil {
			e, _ := strconv.Atoi(m[1])
			if e <= done {
				t.Errorf("%s: epoch %d reported after epoch %d: epochs went backwards", l.pod, e, done)
			}
			done = e
		}
	}
	if done != last {
		t.Errorf("the last epoch reported is %d, want %d", done, last)
	}
	return starts
}

func workerIndexOf(job, pod string) (int, bool) {
	rest, ok := strings.CutPrefix(pod, job+"-worker-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil
}

// watchFailure records whether the job or its PyTorchJob ever says Failed.
func (k *cluster) watchFailure(t *testing.T, ns, name string) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var failed error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			tj := &v1alpha1.TrainingJob{}
			if err := k.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, tj); err == nil && tj.Status.Phase == v1alpha1.PhaseFailed {
				mu.Lock()
				failed = fmt.Errorf("%s failed: %s", name, tj.Status.Message)
				mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		return failed
	}
}

// testTorchrun: a PyTorch job run by real torchrun processes (Debian's
// torch, CPU, gloo), with examples/pytorch/train.py and a checkpoint all
// workers share, through every action Voda takes: start, scale in, scale
// out, a move of worker 0 (which holds torchrun's rendezvous), worker 0's
// pod deleted by someone else (as a drain does), preemption and
// resumption, and completion. Training resumes from its checkpoint
// every time, the epochs never go backwards, the job never fails, and each
// resize's time (from the change Voda reacted to until an epoch is done at
// the new size) is reported.
func testTorchrun(t *testing.T, k *cluster) {
	needTorchrun(t)
	const ns, gpu, job, epochs = "torchrun", "torchrun-gpu", "ddp", 150
	nodes := k.scenario(t, ns, gpu, 4, 1)
	k.watchOvercommit(t, nodes)
	o := controllerOpts(t, gpu) // Elastic FIFO: a job alone gets its maximum
	k.startController(t, o)

	kl := newKubelet(t, k, ns, job)
	ctx, cancel := context.WithCancel(context.Background())
	mirrored := make(chan struct{})
	go func() { defer close(mirrored); kl.run(ctx) }()
	t.Cleanup(func() { cancel(); <-mirrored })
	failed := k.watchFailure(t, ns, job)

	tj := newPyTorchJob(ns, job, gpu, 1, 3, 1)
	c := &tj.Spec.Template.PyTorchJob.Worker.Spec.Containers[0]
	c.Args = []string{"/workspace/train.py", "--epochs=" + strconv.Itoa(epochs), "--steps-per-epoch=60", "--checkpoint=/checkpoint/state.pt"}
	c.Env = []corev1.EnvVar{{Name: "PYTHONPATH", Value: "/workspace"}}
	if os.Getenv("VODA_TORCHRUN_DEFAULTS") != "" {
		// For comparison: torchrun's own settings instead of Voda's, set
		// through the template as a user would.
		tj.Spec.Template.PyTorchJob.RendezvousConf = map[string]string{"last_call_timeout": "30"}
		c.Env = append(c.Env, corev1.EnvVar{Name: "PET_MONITOR_INTERVAL", Value: "5"})
	}
	timings := map[string]time.Duration{}
	began := time.Now()
	k.create(t, tj)
	timings["start (3 workers)"] = kl.trainingAgain(t, began, 3, "training with 3 workers")

	placement := k.waitPTSettled(t, ns, job, 3).Status.Placement
	free := ""
	for _, n := range nodes {
		if !slices.Contains(placement, n) {
			free = n
		}
	}
	// Scale in: the free node and worker 2's lose their GPU label.
	at := time.Now()
	k.setLabel(t, free, "")
	k.setLabel(t, placement[2], "")
	timings["scale in 3→2"] = kl.trainingAgain(t, at, 2, "training with 2 workers")
	// Scale out: one node back.
	at = time.Now()
	k.setLabel(t, free, gpu)
	timings["scale out 2→3"] = kl.trainingAgain(t, at, 3, "training with 3 workers again")
	placement = k.waitPTSettled(t, ns, job, 3).Status.Placement

	// Worker 0's node loses its label while another node is free: worker 0
	// must move, and with it goes torchrun's store.
	k.setLabel(t, nodesOff(nodes, placement)[0], gpu)
	at = time.Now()
	k.setLabel(t, placement[0], "")
	timings["worker 0 moved (3 workers)"] = kl.trainingAgain(t, at, 3, "training after worker 0 moved")
	after := k.waitPTSettled(t, ns, job, 3).Status.Placement
	if after[0] == placement[0] {
		t.Fatalf("worker 0 still on %s", after[0])
	}
	k.expectEvents(t, ns, job, map[string]int{"Restarted: Restarting all 3 workers: worker 0 moves to ": 1})

	// Worker 0's pod deleted by someone else, as a drain evicts it: the
	// other torchruns lose the store; Voda restarts the job before they can
	// fail it.
	pods, err := k.workers(context.Background(), ns, job)
	if err != nil {
		t.Fatal(err)
	}
	w0 := pods[0]
	at = time.Now()
	if err := k.c.Delete(context.Background(), &w0); err != nil {
		t.Fatal(err)
	}
	timings["worker 0 deleted (3 workers)"] = kl.trainingAgain(t, at, 3, "training after worker 0 was deleted")
	k.expectEvents(t, ns, job, map[string]int{"Restarted: Restarting all 3 workers: worker 0 moves to ": 1, "Restarted:": 2})

	// Preemption: every node loses its label, the job is suspended; two
	// come back and it resumes.
	for _, n := range nodes {
		k.setLabel(t, n, "")
	}
	err = testenv.PollUntil(context.Background(), 60*time.Second, "ddp preempted", func(ctx context.Context) (bool, error) {
		pods, err := k.workers(ctx, ns, job)
		return err == nil && len(pods) == 0 && k.job(t, ns, job).Status.Phase == v1alpha1.PhaseWaiting, err
	})
	if err != nil {
		t.Fatal(err)
	}
	at = time.Now()
	k.setLabel(t, nodes[0], gpu)
	k.setLabel(t, nodes[1], gpu)
	timings["resumed (2 workers)"] = kl.trainingAgain(t, at, 2, "training after the resumption")

	kl.waitCompleted(t, ns, job)
	if err := failed(); err != nil {
		t.Fatal(err)
	}
	starts := checkEpochs(t, kl.lines(), epochs)
	if starts < 6 {
		t.Errorf("%d starts of training, want at least 6 (start, two resizes, two restarts, a resumption)", starts)
	}
	for _, e := range kl.exitsSoFar() {
		if !strings.HasSuffix(e, ": 0") {
			t.Errorf("a torchrun exited by itself with %s", e)
		}
	}
	k.expectEvents(t, ns, job, map[string]int{"Preempted:": 1, "Resumed:": 1})
	kl.mu.Lock()
	t.Logf("torchruns that ended by themselves as their pod was being deleted: %v", kl.late)
	kl.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(timings)) {
		t.Logf("torchrun: %-28s training again after %.1f s", name, timings[name].Seconds())
	}
	if t.Failed() {
		for _, l := range kl.lines() {
			t.Logf("%s %s %s", l.at.Format("15:04:05.000"), l.pod, l.text)
		}
	}
}

func nodesOff(nodes, placement []string) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(placement, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		panic(errors.New("no node off the placement"))
	}
	return out
}
