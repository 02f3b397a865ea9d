package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	volcano "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

func TestGangResolve(t *testing.T) {
	for _, c := range []struct {
		in   Gang
		want Gang
		err  string
	}{
		{in: Gang{}, want: Gang{Scheduler: GangNone}},
		{in: Gang{Scheduler: "none"}, want: Gang{Scheduler: GangNone}},
		{in: Gang{Scheduler: "scheduler-plugins"}, want: Gang{Scheduler: GangSchedulerPlugins, SchedulerName: "scheduler-plugins-scheduler"}},
		{in: Gang{Scheduler: "scheduler-plugins", SchedulerName: "gang"}, want: Gang{Scheduler: GangSchedulerPlugins, SchedulerName: "gang"}},
		{in: Gang{Scheduler: "volcano"}, want: Gang{Scheduler: GangVolcano, SchedulerName: "volcano", Queue: "default"}},
		{in: Gang{Scheduler: "volcano", Queue: "research"}, want: Gang{Scheduler: GangVolcano, SchedulerName: "volcano", Queue: "research"}},
		{in: Gang{Scheduler: "kueue"}, err: `unknown gang scheduler "kueue"; want one of none, scheduler-plugins, volcano`},
		{in: Gang{Scheduler: "Volcano"}, err: `unknown gang scheduler "Volcano"`},
		{in: Gang{Queue: "research"}, err: "needs --gang-scheduler"},
		{in: Gang{SchedulerName: "x"}, err: "needs --gang-scheduler"},
		{in: Gang{Scheduler: "scheduler-plugins", Queue: "research"}, err: "only for --gang-scheduler=volcano"},
	} {
		got, err := c.in.Resolve()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// templates returns the launcher and worker pod templates of an MPIJob.
func templates(t *testing.T, u *unstructured.Unstructured) (launcher, worker corev1.PodTemplateSpec) {
	t.Helper()
	for role, into := range map[string]*corev1.PodTemplateSpec{"Launcher": &launcher, "Worker": &worker} {
		m, _, _ := unstructured.NestedMap(u.Object, "spec", "mpiReplicaSpecs", role, "template")
		if err := fromUnstructured(m, into); err != nil {
			t.Fatal(err)
		}
	}
	return launcher, worker
}

// With scheduler-plugins both templates carry the PodGroup label and the
// secondary scheduler's name, the launcher starts with the workers, and
// Voda's gate stays on the workers.
func TestBuildMPIJobSchedulerPlugins(t *testing.T) {
	g, _ := Gang{Scheduler: GangSchedulerPlugins}.Resolve()
	u, err := buildMPIJob(testJob(), 3, g, v1alpha1.GPUResource, nil)
	if err != nil {
		t.Fatal(err)
	}
	launcher, worker := templates(t, u)
	for name, tpl := range map[string]corev1.PodTemplateSpec{"launcher": launcher, "worker": worker} {
		if tpl.Labels[SchedulerPluginsPodGroupLabel] != "bert" || tpl.Labels[v1alpha1.JobLabel] != "bert" {
			t.Errorf("%s labels %v", name, tpl.Labels)
		}
		if tpl.Spec.SchedulerName != "scheduler-plugins-scheduler" {
			t.Errorf("%s schedulerName %q", name, tpl.Spec.SchedulerName)
		}
	}
	if worker.Labels["team"] != "nlp" {
		t.Errorf("the user's labels are lost: %v", worker.Labels)
	}
	if !gated(&corev1.Pod{Spec: worker.Spec}) || gated(&corev1.Pod{Spec: launcher.Spec}) {
		t.Errorf("gates: worker %v, launcher %v", worker.Spec.SchedulingGates, launcher.Spec.SchedulingGates)
	}
	if p, _, _ := unstructured.NestedString(u.Object, "spec", "launcherCreationPolicy"); p != "AtStartup" {
		t.Errorf("launcherCreationPolicy %q", p)
	}
}

func TestBuildMPIJobVolcano(t *testing.T) {
	g, _ := Gang{Scheduler: GangVolcano}.Resolve()
	u, err := buildMPIJob(testJob(), 2, g, v1alpha1.GPUResource, nil)
	if err != nil {
		t.Fatal(err)
	}
	launcher, worker := templates(t, u)
	for name, tpl := range map[string]corev1.PodTemplateSpec{"launcher": launcher, "worker": worker} {
		if tpl.Annotations["scheduling.k8s.io/group-name"] != "bert" || tpl.Spec.SchedulerName != "volcano" {
			t.Errorf("%s: annotations %v, schedulerName %q", name, tpl.Annotations, tpl.Spec.SchedulerName)
		}
		if _, ok := tpl.Labels[SchedulerPluginsPodGroupLabel]; ok {
			t.Errorf("%s has the scheduler-plugins label", name)
		}
	}
}

// The PodGroups: minMember is the workers plus the launcher of an MPIJob;
// the group belongs to the TrainingJob.
func TestPodGroup(t *testing.T) {
	tj := testJob()
	sp, _ := Gang{Scheduler: GangSchedulerPlugins}.Resolve()
	u, err := sp.podGroup(tj, mpiRuntime.minMember(3))
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "scheduling.x-k8s.io/v1alpha1" || u.GetKind() != "PodGroup" || u.GetName() != "bert" || u.GetNamespace() != "ns" {
		t.Errorf("scheduler-plugins PodGroup %v", u.Object["metadata"])
	}
	if m, _, _ := unstructured.NestedInt64(u.Object, "spec", "minMember"); m != 4 {
		t.Errorf("minMember %d, want 4", m)
	}
	if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != tj.UID || refs[0].Kind != "TrainingJob" {
		t.Errorf("owners %+v", refs)
	}

	vc, _ := Gang{Scheduler: GangVolcano, Queue: "research"}.Resolve()
	u, err = vc.podGroup(tj, mpiRuntime.minMember(2))
	if err != nil {
		t.Fatal(err)
	}
	var pg volcano.PodGroup
	if err := fromUnstructured(u.Object, &pg); err != nil {
		t.Fatal(err)
	}
	if pg.APIVersion != "scheduling.volcano.sh/v1beta1" || pg.Kind != "PodGroup" || pg.Name != "bert" {
		t.Errorf("Volcano PodGroup %+v", pg.TypeMeta)
	}
	if pg.Spec.MinMember != 3 || pg.Spec.Queue != "research" {
		t.Errorf("Volcano spec %+v", pg.Spec)
	}
	if _, ok := u.Object["status"]; ok {
		t.Error("Voda writes the status of a Volcano PodGroup")
	}
}

// The gang clock counts from the latest of a job's placement and the
// release of its gated workers, and its Event says which (or that this
// controller took the job over unsettled).
func TestGangClockSaysWhatItCounts(t *testing.T) {
	placed := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	later := placed.Add(time.Minute)
	for _, c := range []struct {
		d    disruption
		at   time.Time
		says string
	}{
		{disruption{since: placed}, placed, "after they were placed"},
		{disruption{since: placed, released: later}, later, "after they were let go to their nodes"},
		{disruption{since: later, released: placed}, later, "after they were placed"},
		{disruption{since: placed, tookOver: true}, placed, "after this controller took over"},
		{disruption{since: placed, released: later, tookOver: true}, later, "after they were let go to their nodes"},
	} {
		at, says := c.d.clock()
		if !at.Equal(c.at) || says != c.says {
			t.Errorf("%+v: clock %s %q, want %s %q", c.d, at, says, c.at, c.says)
		}
	}
	c := &Controller{disrupted: map[api.JobID]disruption{}}
	c.takingOver("a", 2)
	c.restarting("a", 3)
	if d := c.disrupted["a"]; !d.tookOver || d.workers != 3 {
		t.Errorf("a restart while taken over: %+v", d)
	}
	c.restarting("b", 1)
	if d := c.disrupted["b"]; d.tookOver {
		t.Errorf("a placement counted as taken over: %+v", d)
	}
}
