package kube

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vodascheduler/voda/pkg/algorithm"
	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func testJob() *v1alpha1.TrainingJob {
	return &v1alpha1.TrainingJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bert", UID: "u1", CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1alpha1.TrainingJobSpec{GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Priority: 1, Epochs: 10, Category: "bert",
			Template: v1alpha1.TrainingJobTemplate{MPIJob: &v1alpha1.MPIJobTemplate{
				Launcher: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "l", Image: "i"}}}},
				Worker: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "nlp"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "i"}}},
				},
			}}},
	}
}

// A record written to a status and read back is the same record, with the
// time the controller was away added to the running counters.
func TestStatusRoundTrip(t *testing.T) {
	rec := scheduler.Job{
		ID: "ns/bert", Spec: specOf(testJob(), nil), Phase: api.PhaseRunning,
		Workers: 2, Nodes: []api.NodeName{"n1", "n2"}, Queue: 1,
		Submitted: t0, FirstStarted: t0.Add(time.Minute), LastStarted: t0.Add(2 * time.Minute),
		WaitingSeconds: 60, RunningSeconds: 120.5, GPUSeconds: 241, SinceStartGPUSeconds: 100,
		LastRunSeconds: 30, WaitingSinceRunSeconds: 5, Rescales: 2, Restarts: 1, Preemptions: 1,
		Remaining: 900, Message: "running", Accounted: t0.Add(3 * time.Minute),
	}
	tj := testJob()
	tj.Status = statusOf(rec)
	if tj.Status.Running != "2m1s" || tj.Status.Waiting != "1m0s" {
		t.Errorf("words: running %q waiting %q", tj.Status.Running, tj.Status.Waiting)
	}
	back := recordOf(tj, t0.Add(3*time.Minute+10*time.Second), nil)
	want := rec
	want.RunningSeconds += 10
	want.GPUSeconds += 20
	want.SinceStartGPUSeconds += 20
	want.Accounted = t0.Add(3*time.Minute + 10*time.Second)
	if d := cmp.Diff(want, back, cmp.AllowUnexported(scheduler.Job{})); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

// A waiting job's away time counts as waiting.
func TestRecordOfWaiting(t *testing.T) {
	tj := testJob()
	tj.Status = v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseWaiting, WaitingMillis: 5000, AccountedTime: &metav1.Time{Time: t0}}
	r := recordOf(tj, t0.Add(7*time.Second), nil)
	if r.WaitingSeconds != 12 || r.WaitingSinceRunSeconds != 7 || r.Submitted != t0 || r.Remaining != -1 {
		t.Errorf("record %+v", r)
	}
}

// The status patch clears what the new status leaves empty.
func TestStatusPatchClears(t *testing.T) {
	data, err := statusPatch(v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseWaiting, Message: "waiting"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	s := m["status"]
	if s["phase"] != "Waiting" || s["message"] != "waiting" {
		t.Errorf("patch %s", data)
	}
	for _, k := range []string{"placement", "workers", "lastStartTime", "remainingSeconds"} {
		if v, ok := s[k]; !ok || v != nil {
			t.Errorf("patch %s: %s is %v, want null", data, k, v)
		}
	}
	// The jobs' progress reports are the REST API's, and the time and
	// count of type choices the type choice's: left as they are.
	for _, k := range []string{"progress", "gpuTypeTime", "gpuTypeMoves"} {
		if _, ok := s[k]; ok {
			t.Errorf("patch %s touches %s", data, k)
		}
	}
}

func TestSameDecisionIgnoresCounters(t *testing.T) {
	a := v1alpha1.TrainingJobStatus{Phase: v1alpha1.PhaseRunning, Workers: 2, RunningMillis: 5, Running: "0s"}
	b := a
	b.RunningMillis, b.Running = 9000, "9s"
	if !sameDecision(a, b) {
		t.Error("counters alone changed the decision")
	}
	b.Workers = 3
	if sameDecision(a, b) {
		t.Error("a new allocation is the same decision")
	}
}

// The MPIJob carries the user's template plus Voda's gate, label and GPU,
// and belongs to the TrainingJob.
func TestBuildMPIJob(t *testing.T) {
	u, err := buildMPIJob(testJob(), 3, Gang{}, v1alpha1.GPUResource, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetName() != "bert" || u.GetNamespace() != "ns" || u.GetLabels()[v1alpha1.JobLabel] != "bert" {
		t.Errorf("metadata %v", u.Object["metadata"])
	}
	refs := u.GetOwnerReferences()
	if len(refs) != 1 || refs[0].Kind != "TrainingJob" || refs[0].UID != "u1" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references %+v", refs)
	}
	st := mpiRuntime.read(u)
	if st.replicas != 3 || st.suspended {
		t.Errorf("state %+v", st)
	}
	w, _, _ := unstructured.NestedMap(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template")
	var tpl corev1.PodTemplateSpec
	if err := fromUnstructured(w, &tpl); err != nil {
		t.Fatal(err)
	}
	if tpl.Labels["team"] != "nlp" || tpl.Labels[v1alpha1.JobLabel] != "bert" {
		t.Errorf("worker labels %v", tpl.Labels)
	}
	if len(tpl.Spec.SchedulingGates) != 1 || tpl.Spec.SchedulingGates[0].Name != v1alpha1.PlacementGate {
		t.Errorf("gates %v", tpl.Spec.SchedulingGates)
	}
	if q := tpl.Spec.Containers[0].Resources.Limits[v1alpha1.GPUResource]; q.Value() != 1 {
		t.Errorf("GPU limit %v", q)
	}
	if p, _, _ := unstructured.NestedString(u.Object, "spec", "launcherCreationPolicy"); p != "WaitForWorkersReady" {
		t.Errorf("launcherCreationPolicy %q", p)
	}
	// The user's template is not changed.
	if len(testJob().Spec.Template.MPIJob.Worker.Spec.SchedulingGates) != 0 {
		t.Error("template mutated")
	}
}

func TestReadMPIJobConditions(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Running", "status": "False"},
		map[string]any{"type": "Succeeded", "status": "True", "message": "done"},
	}}}}
	if st := mpiRuntime.read(u); !st.succeeded || st.failed || st.message != "done" {
		t.Errorf("state %+v", st)
	}
}

func TestWorkerIndex(t *testing.T) {
	for _, c := range []struct {
		pod  string
		want int
		ok   bool
	}{{"bert-worker-0", 0, true}, {"bert-worker-12", 12, true}, {"bert-launcher-x1", 0, false}, {"bert-worker-x", 0, false}, {"other-worker-1", 0, false}} {
		if i, ok := workerIndex("bert", c.pod); i != c.want || ok != c.ok {
			t.Errorf("workerIndex(%s) = %d, %v", c.pod, i, ok)
		}
	}
}

func TestDescribe(t *testing.T) {
	nodes := []api.NodeName{"gpu1", "gpu1", "gpu2", "gpu2"}
	cases := []struct {
		a    api.Action
		j    scheduler.Job
		want string
	}{
		{api.Action{Kind: api.ActionStart, To: 4, Nodes: nodes}, scheduler.Job{}, "Started with 4 workers on gpu1, gpu2"},
		{api.Action{Kind: api.ActionStart, To: 2, Nodes: nodes[:2]}, scheduler.Job{Preemptions: 1}, "Resumed with 2 workers on gpu1"},
		{api.Action{Kind: api.ActionScaleOut, From: 2, To: 4, Nodes: nodes}, scheduler.Job{}, "Scaled 2→4 workers, on gpu1, gpu2"},
		{api.Action{Kind: api.ActionHalt, From: 2, Reason: "queue 1 below queue 0"}, scheduler.Job{}, "Preempted: 2 workers released (queue 1 below queue 0)"},
		{api.Action{Kind: api.ActionMigrate, Moves: []api.WorkerMove{{Index: 3, From: "gpu1", To: "gpu2"}}}, scheduler.Job{}, "Migrated worker-3 gpu1→gpu2"},
	}
	for _, c := range cases {
		if _, got := describe(c.a, c.j); got != c.want {
			t.Errorf("describe(%v) = %q, want %q", c.a, got, c.want)
		}
	}
}

func TestNodeInfo(t *testing.T) {
	ready := corev1.NodeStatus{
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Allocatable: corev1.ResourceList{v1alpha1.GPUResource: *resourceQ(4)},
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1alpha1.AcceleratorLabel: "v100", corev1.LabelHostname: "host1"}}, Status: ready}
	if got := nodeInfoOf(n, nil); got != (nodeInfo{gpuType: "v100", gpus: 4, hostname: "host1"}) {
		t.Errorf("ready node: %+v", got)
	}
	cordoned := n.DeepCopy()
	cordoned.Spec.Unschedulable = true
	unlabelled := n.DeepCopy()
	delete(unlabelled.Labels, v1alpha1.AcceleratorLabel)
	notReady := n.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	if !nodeInfoOf(notReady, nil).usable() {
		t.Error("a node that is briefly not Ready lost its place")
	}
	noGPUs := n.DeepCopy()
	noGPUs.Status.Allocatable = nil
	for name, n := range map[string]*corev1.Node{"cordoned": cordoned, "unlabelled": unlabelled, "no GPUs": noGPUs} {
		if nodeInfoOf(n, nil).usable() {
			t.Errorf("%s node is usable", name)
		}
	}
	if !strings.Contains(jobKey("a/b").String(), "a/b") {
		t.Error("jobKey")
	}
}

func resourceQ(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

func TestParseSettings(t *testing.T) {
	base, err := algorithm.ParseParams(algorithm.DefaultConfig(), []string{"hesrpt.exponent=0.5", "tiresias.promote-knob=4"})
	if err != nil {
		t.Fatal(err)
	}
	def := Defaults{Policy: "ElasticFIFO", RateLimit: 30 * time.Second, Algorithm: base}
	got, err := parseSettings(map[string]string{
		"v100": "algorithm: tiresias\nrateLimit: 10s\n",
		"k80":  "rateLimit: 0s",
		"a100": "algorithm: Optimus",
		"t4":   "rateLimit: -1s",
		"p100": "algoritm: FIFO",
		// Its own thresholds; the controller's exponent and promote knob stay.
		"h100": "algorithm: Tiresias\npolicyParams: [tiresias.thresholds=7200]",
		"l4":   "policyParams: [hesrpt.exponent=-1]",
		"l40":  "policyParams: ['tiresias.thresholds=10,5']",
		// Unquoted, YAML splits the list at the comma.
		"l40s":  "policyParams: [tiresias.thresholds=10,5]",
		"mi300": "policyParams: [hesrpt.aging=1h, HeSRPT.Aging=2h]",
	}, def)
	h100, _ := algorithm.ParseParams(base, []string{"tiresias.thresholds=7200"})
	want := map[api.GPUType]settings{
		"v100": {policy: "Tiresias", rateLimit: 10 * time.Second, algo: base.WithDefaults()},
		"k80":  {policy: "ElasticFIFO", rateLimit: 0, algo: base.WithDefaults()},
		"h100": {policy: "Tiresias", rateLimit: 30 * time.Second, algo: h100},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(settings{})); d != "" {
		t.Errorf("settings (-want +got):\n%s", d)
	}
	if p := got["h100"].algo.Changed(""); !slices.Equal(p, []string{"hesrpt.exponent=0.5", "tiresias.thresholds=7200", "tiresias.promote-knob=4"}) {
		t.Errorf("h100 runs with %v, want its own thresholds over the controller's parameters", p)
	}
	for _, bad := range []string{"a100: unknown policy", "t4: rateLimit \"-1s\"", "p100: error unmarshaling JSON",
		"l4: policyParams: policy parameter hesrpt.exponent=-1", "l40: policyParams: tiresias thresholds must increase",
		`l40s: policyParams: policy parameter "5": want NAME=VALUE`,
		"mi300: policyParams: policy parameter hesrpt.aging is given twice"} {
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("error %v does not report %q", err, bad)
		}
	}
}

func TestPodGPUs(t *testing.T) {
	gpus := func(req, lim string) corev1.Container {
		c := corev1.Container{}
		if req != "" {
			c.Resources.Requests = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse(req)}
		}
		if lim != "" {
			c.Resources.Limits = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse(lim)}
		}
		return c
	}
	cases := []struct {
		name       string
		containers []corev1.Container
		inits      []corev1.Container
		want       int64
	}{
		{"none", []corev1.Container{{}}, nil, 0},
		{"limits only", []corev1.Container{gpus("", "2"), gpus("", "1")}, nil, 3},
		{"requests", []corev1.Container{gpus("2", "2")}, nil, 2},
		{"a larger init container", []corev1.Container{gpus("", "1")}, []corev1.Container{gpus("", "4")}, 4},
	}
	for _, c := range cases {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: c.containers, InitContainers: c.inits}}
		if got, _ := v1alpha1.PodGPUs(&p.Spec, v1alpha1.GPUResource); got != c.want {
			t.Errorf("%s: %d GPUs, want %d", c.name, got, c.want)
		}
		slim, _ := slimPod([]corev1.ResourceName{v1alpha1.GPUResource, corev1.ResourceCPU})(p)
		if got, _ := v1alpha1.PodGPUs(&slim.(*corev1.Pod).Spec, v1alpha1.GPUResource); got != c.want {
			t.Errorf("%s: the cached pod holds %d GPUs, want %d", c.name, got, c.want)
		}
	}
}

// A worker of several GPUs: the template's first container gets them, MPI
// one slot per GPU, and a template that asks for GPUs keeps its own.
func TestBuildMPIJobWithWorkersOfSeveralGPUs(t *testing.T) {
	limit := func(u *unstructured.Unstructured) int64 {
		w, _, _ := unstructured.NestedMap(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template")
		var tpl corev1.PodTemplateSpec
		if err := fromUnstructured(w, &tpl); err != nil {
			t.Fatal(err)
		}
		n, _ := v1alpha1.PodGPUs(&tpl.Spec, v1alpha1.GPUResource)
		return n
	}
	tj := testJob()
	tj.Spec.GPUsPerWorker = 4
	u, err := buildMPIJob(tj, 2, Gang{}, v1alpha1.GPUResource, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := limit(u); n != 4 {
		t.Errorf("worker asks for %d GPUs, want 4", n)
	}
	if s, _, _ := unstructured.NestedInt64(u.Object, "spec", "slotsPerWorker"); s != 4 {
		t.Errorf("slotsPerWorker %d, want 4", s)
	}

	tj = testJob()
	c := &tj.Spec.Template.MPIJob.Worker.Spec.Containers[0]
	c.Resources.Limits = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("2")}
	if u, err = buildMPIJob(tj, 2, Gang{}, v1alpha1.GPUResource, nil); err != nil {
		t.Fatal(err)
	}
	if n := limit(u); n != 2 {
		t.Errorf("worker asks for %d GPUs, want the template's 2", n)
	}
	if k := specOf(tj, nil).K(); k != 2 {
		t.Errorf("the engine counts %d GPUs per worker, want 2", k)
	}

	tj.Spec.GPUsPerWorker = 1
	if _, err := buildMPIJob(tj, 2, Gang{}, v1alpha1.GPUResource, nil); err == nil || !strings.Contains(err.Error(), "spec.gpusPerWorker is 1 but") {
		t.Errorf("a mismatch built an MPIJob: %v", err)
	}
}

// Running means every planned worker runs: until the reconciler has seen
// them all, the status says Starting, how many run and why the others do
// not, and the engine still counts the job as running.
func TestStatusSaysStartingUntilEveryWorkerRuns(t *testing.T) {
	c := &Controller{workersSeen: map[api.JobID]seen{}}
	rec := scheduler.Job{ID: "ns/bert", Spec: api.JobSpec{MinWorkers: 1, MaxWorkers: 4, GPUsPerWorker: 2},
		Phase: api.PhaseRunning, Workers: 2, Nodes: []api.NodeName{"n1", "n2"}, Message: "running: 4 GPUs (2 workers of 2)"}
	show := func() v1alpha1.TrainingJobStatus {
		s := statusOf(rec)
		c.showWorkers(rec.ID, rec.Spec.K(), &s)
		return s
	}
	s := show()
	if s.Phase != v1alpha1.PhaseStarting || s.RunningWorkers != 0 || s.GPUs != 4 || s.GPUsPerWorker != 2 ||
		s.Message != "0 of 2 workers running; the workers are being created" {
		t.Errorf("before any worker was seen: %+v", s)
	}
	if !c.sawWorkers(rec.ID, seen{running: 1, why: "worker 1 is Pending: 0/2 nodes are available"}) {
		t.Error("a new sighting was not reported as a change")
	}
	s = show()
	if s.Phase != v1alpha1.PhaseStarting || s.RunningWorkers != 1 || s.Message != "1 of 2 workers running; worker 1 is Pending: 0/2 nodes are available" {
		t.Errorf("one of two running: phase %s, %d running, %q", s.Phase, s.RunningWorkers, s.Message)
	}
	tj := testJob()
	tj.Status = s
	if back := recordOf(tj, t0, nil); back.Phase != api.PhaseRunning {
		t.Errorf("a Starting status restores as %s, want Running", back.Phase)
	}
	c.sawWorkers(rec.ID, seen{running: 2})
	if s = show(); s.Phase != v1alpha1.PhaseRunning || s.RunningWorkers != 2 || s.Message != rec.Message {
		t.Errorf("all running: phase %s, %d running, %q", s.Phase, s.RunningWorkers, s.Message)
	}
	if c.sawWorkers(rec.ID, seen{running: 2}) {
		t.Error("the same sighting was reported as a change")
	}
	c.forgetWorkers(rec.ID) // an action: the new workers are not seen yet
	if s = show(); s.Phase != v1alpha1.PhaseStarting {
		t.Errorf("after an action: phase %s, want Starting", s.Phase)
	}
}

func TestWorkerState(t *testing.T) {
	pending := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}}}
	gatedPod := &corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: v1alpha1.PlacementGate}}}}
	creating := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	running := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cases := []struct {
		pod  *corev1.Pod
		gang bool
		want string
	}{
		{nil, false, "worker 3 has no pod yet"},
		{gatedPod, true, "worker 3 waits for the other workers' pods before it is placed (gang)"},
		{gatedPod, false, "worker 3 is being placed on n2"},
		{pending, false, "worker 3 is Pending: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."},
		{creating, false, "worker 3 is Pending on n1"},
		{running, false, ""},
	}
	for _, c := range cases {
		if got := workerState(3, c.pod, "n2", c.gang); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func pytorchTestJob() *v1alpha1.TrainingJob {
	tj := testJob()
	tj.Spec.GPUsPerWorker = 4
	tj.Spec.Template = v1alpha1.TrainingJobTemplate{PyTorchJob: &v1alpha1.PyTorchJobTemplate{
		Worker: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Image: "s"}, {Name: v1alpha1.PyTorchContainer, Image: "i"}}}},
	}}
	return tj
}

// The PyTorchJob is elastic between the job's worker range, with torchrun's
// nproc-per-node the GPUs per worker, and its workers carry Voda's gate,
// label and GPUs on the container the operator configures.
func TestBuildPyTorchJob(t *testing.T) {
	tj := pytorchTestJob()
	u, err := buildPyTorchJob(tj, 3, Gang{}, v1alpha1.GPUResource, []corev1.EnvVar{{Name: "VODA_GPUS_PER_WORKER", Value: "4"}})
	if err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != "PyTorchJob" || u.GetAPIVersion() != "kubeflow.org/v1" || u.GetName() != "bert" {
		t.Errorf("object %s %s %s", u.GetAPIVersion(), u.GetKind(), u.GetName())
	}
	if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "u1" {
		t.Errorf("owner references %+v", refs)
	}
	want := map[string]any{"rdzvBackend": "c10d", "minReplicas": int64(1), "maxReplicas": int64(4), "maxRestarts": int64(defaultMaxRestarts),
		"rdzvConf": []any{map[string]any{"key": "last_call_timeout", "value": "3"}}}
	got, _, _ := unstructured.NestedMap(u.Object, "spec", "elasticPolicy")
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("elasticPolicy (-want +got):\n%s", d)
	}
	if n, _, _ := unstructured.NestedString(u.Object, "spec", "nprocPerNode"); n != "4" {
		t.Errorf("nprocPerNode %q, want 4", n)
	}
	if p, _, _ := unstructured.NestedString(u.Object, "spec", "pytorchReplicaSpecs", "Worker", "restartPolicy"); p != "ExitCode" {
		t.Errorf("restartPolicy %q, want ExitCode", p)
	}
	st := pytorchRuntime.read(u)
	if st.replicas != 3 || st.suspended {
		t.Errorf("state %+v", st)
	}
	w, _, _ := unstructured.NestedMap(u.Object, "spec", "pytorchReplicaSpecs", "Worker", "template")
	var tpl corev1.PodTemplateSpec
	if err := fromUnstructured(w, &tpl); err != nil {
		t.Fatal(err)
	}
	if tpl.Labels[v1alpha1.JobLabel] != "bert" || len(tpl.Spec.SchedulingGates) != 1 {
		t.Errorf("labels %v, gates %v", tpl.Labels, tpl.Spec.SchedulingGates)
	}
	if _, ok := tpl.Spec.Containers[0].Resources.Limits[v1alpha1.GPUResource]; ok {
		t.Error("the sidecar got the GPUs")
	}
	if q := tpl.Spec.Containers[1].Resources.Limits[v1alpha1.GPUResource]; q.Value() != 4 {
		t.Errorf("the pytorch container asks for %v GPUs, want 4", q.Value())
	}
	wantEnv := []corev1.EnvVar{{Name: "VODA_GPUS_PER_WORKER", Value: "4"}, {Name: "PET_MONITOR_INTERVAL", Value: "1"}}
	if d := cmp.Diff(wantEnv, tpl.Spec.Containers[1].Env); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
	if env := tpl.Spec.Containers[0].Env; len(env) != 1 {
		t.Errorf("the sidecar's env %v, want only Voda's own", env)
	}
	if rs := restartSeconds(tj); rs != 16 {
		t.Errorf("a PyTorch job's restart is %v s, want the measured 16", rs)
	}

	// Scaling and suspending patch the worker replicas and runPolicy.
	p := pytorchRuntime.patch(true, 2)
	wantPatch := map[string]any{"spec": map[string]any{"runPolicy": map[string]any{"suspend": true},
		"pytorchReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": int64(2)}}}}
	if d := cmp.Diff(wantPatch, p); d != "" {
		t.Errorf("patch (-want +got):\n%s", d)
	}
	if m := pytorchRuntime.minMember(3); m != 3 {
		t.Errorf("a PyTorchJob gang of 3 workers has minMember %d, want 3 (no launcher)", m)
	}
	if m := mpiRuntime.minMember(3); m != 4 {
		t.Errorf("an MPIJob gang of 3 workers has minMember %d, want 4", m)
	}
}

// The template's rendezvous settings win key by key, and its own monitor
// interval over Voda's; with its own last call the restart time is
// unknown, left to the policy.
func TestBuildPyTorchJobRendezvousOverrides(t *testing.T) {
	tj := pytorchTestJob()
	tj.Spec.Template.PyTorchJob.RendezvousConf = map[string]string{"last_call_timeout": "10", "join_timeout": "900"}
	c := &tj.Spec.Template.PyTorchJob.Worker.Spec.Containers[1]
	c.Env = []corev1.EnvVar{{Name: "PET_MONITOR_INTERVAL", Value: "5"}}
	u, err := buildPyTorchJob(tj, 2, Gang{}, v1alpha1.GPUResource, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedSlice(u.Object, "spec", "elasticPolicy", "rdzvConf")
	want := []any{map[string]any{"key": "join_timeout", "value": "900"}, map[string]any{"key": "last_call_timeout", "value": "10"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rdzvConf (-want +got):\n%s", d)
	}
	w, _, _ := unstructured.NestedMap(u.Object, "spec", "pytorchReplicaSpecs", "Worker", "template")
	var tpl corev1.PodTemplateSpec
	if err := fromUnstructured(w, &tpl); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]corev1.EnvVar{{Name: "PET_MONITOR_INTERVAL", Value: "5"}}, tpl.Spec.Containers[1].Env); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
	if rs := restartSeconds(tj); rs != 0 {
		t.Errorf("with its own last call a job's restart is %v s, want 0 (the policy's assumption)", rs)
	}
	if rs := restartSeconds(testJob()); rs != 0 {
		t.Errorf("an MPIJob's restart is %v s, want 0 (the policy's assumption)", rs)
	}
}

// Each GPU type counts its own resource: whole cores for a CPU type, a MIG
// profile, AMD GPUs; a template that asks for NVIDIA GPUs on another type is
// refused by name.
func TestAccelerators(t *testing.T) {
	acc, err := v1alpha1.ParseAccelerators([]string{"mi300=amd.com/gpu", "a100-mig=nvidia.com/mig-1g.10gb", "cpu-pool=cpu"})
	if err != nil {
		t.Fatal(err)
	}
	node := func(gpuType string, res corev1.ResourceList) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1alpha1.AcceleratorLabel: gpuType}},
			Status: corev1.NodeStatus{Allocatable: res}}
	}
	cases := []struct {
		node *corev1.Node
		want int
	}{
		{node("v100", corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8"), "amd.com/gpu": resource.MustParse("2")}), 8},
		{node("mi300", corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8"), "amd.com/gpu": resource.MustParse("2")}), 2},
		{node("a100-mig", corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("7")}), 7},
		{node("cpu-pool", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("63500m")}), 63},
		{node("mi300", corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("8")}), 0},
	}
	for _, c := range cases {
		if _, got := NodeGPUs(c.node, acc); got != c.want {
			t.Errorf("%s node %v: %d units, want %d", c.node.Labels[v1alpha1.AcceleratorLabel], c.node.Status.Allocatable, got, c.want)
		}
	}

	tj := testJob()
	tj.Spec.GPUType = "cpu-pool"
	tj.Spec.Template.MPIJob.Worker.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3500m")}
	if k := specOf(tj, acc).K(); k != 4 {
		t.Errorf("a worker asking for 3.5 cores counts %d, want 4 (rounded up)", k)
	}
	tj = testJob()
	tj.Spec.GPUType, tj.Spec.GPUsPerWorker = "mi300", 2
	u, err := buildMPIJob(tj, 1, Gang{}, acc.Of("mi300"), nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _, _ := unstructured.NestedMap(u.Object, "spec", "mpiReplicaSpecs", "Worker", "template")
	var tpl corev1.PodTemplateSpec
	if err := fromUnstructured(w, &tpl); err != nil {
		t.Fatal(err)
	}
	if q := tpl.Spec.Containers[0].Resources.Limits["amd.com/gpu"]; q.Value() != 2 {
		t.Errorf("the worker asks for %v amd.com/gpu, want 2", q.Value())
	}
	if _, ok := tpl.Spec.Containers[0].Resources.Limits[v1alpha1.GPUResource]; ok {
		t.Error("an AMD worker asks for NVIDIA GPUs")
	}
	tj.Spec.Template.MPIJob.Worker.Spec.Containers[0].Resources.Limits = corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("2")}
	if _, err := tj.Spec.WorkerAccelerators(acc.Of("mi300")); err == nil || !strings.Contains(err.Error(), "the job's GPU type schedules amd.com/gpu") {
		t.Errorf("NVIDIA GPUs on an AMD type: %v", err)
	}

	for _, bad := range [][]string{{"x"}, {"a=memory"}, {"a=kubernetes.io/foo"}, {"a=amd.com/gpu", "a=cpu"}, {"bad type=cpu"}} {
		if _, err := v1alpha1.ParseAccelerators(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
