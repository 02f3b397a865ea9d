package kube

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// jobID names a TrainingJob inside the engines: namespace/name.
func jobID(n types.NamespacedName) api.JobID { return api.JobID(n.Namespace + "/" + n.Name) }

// jobKey is the inverse of jobID.
func jobKey(id api.JobID) types.NamespacedName {
	ns, name, _ := strings.Cut(string(id), "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

// specOf turns a TrainingJob into the engine's job spec on its current GPU
// type, with its GPUs per worker counted in that type's resource (acc). A
// spec whose GPUs per worker are in error (see
// TrainingJobSpec.WorkerAccelerators) is refused before it gets here.
func specOf(tj *v1alpha1.TrainingJob, acc v1alpha1.Accelerators) api.JobSpec {
	s := tj.Spec
	t := tj.CurrentGPUType()
	k, _ := s.WorkerAccelerators(acc.Of(t))
	return api.JobSpec{
		GPUsPerWorker:    k,
		GPUType:          api.GPUType(t),
		MinWorkers:       int(s.MinWorkers),
		MaxWorkers:       int(s.MaxWorkers),
		RequestedWorkers: int(s.RequestedWorkers),
		Priority:         int(s.Priority),
		Epochs:           int(s.Epochs),
		Category:         s.Category,
		ClusterQueue:     tj.Status.ClusterQueue,
		RestartSeconds:   restartSeconds(tj),
	}
}

// restartSeconds is what a resize costs a job of tj's runtime, where Voda
// measured it: torchrun's, with the last call Voda renders (a template
// that sets its own leaves the figure unknown). Elastic Horovod's is left
// to the policies' assumption.
func restartSeconds(tj *v1alpha1.TrainingJob) float64 {
	if t := tj.Spec.Template.PyTorchJob; t != nil {
		if _, own := t.RendezvousConf["last_call_timeout"]; !own {
			return api.PyTorchRestart.Seconds()
		}
	}
	return 0
}

// statusOf turns the engine's record of a job into the TrainingJob status,
// its counters as of the instant the engine accounted them to (the engine
// brings every copy it hands out up to its clock).
func statusOf(j scheduler.Job) v1alpha1.TrainingJobStatus {
	s := v1alpha1.TrainingJobStatus{
		Phase:                 v1alpha1.Phase(j.Phase),
		GPUType:               string(j.Spec.GPUType),
		Message:               j.Message,
		Workers:               int32(j.Workers),
		Queue:                 int32(j.Queue),
		ClusterQueue:          j.Spec.ClusterQueue,
		SubmitTime:            timeOf(j.Submitted),
		FirstStartTime:        timeOf(j.FirstStarted),
		LastStartTime:         timeOf(j.LastStarted),
		FinishTime:            timeOf(j.Finished),
		WaitingMillis:         millis(j.WaitingSeconds),
		RunningMillis:         millis(j.RunningSeconds),
		GPUMillis:             millis(j.GPUSeconds),
		SinceStartGPUMillis:   millis(j.SinceStartGPUSeconds),
		LastRunMillis:         millis(j.LastRunSeconds),
		WaitingSinceRunMillis: millis(j.WaitingSinceRunSeconds),
		AccountedTime:         timeOf(j.Accounted),
		Waiting:               words(j.WaitingSeconds),
		Running:               words(j.RunningSeconds),
		Rescales:              int32(j.Rescales),
		Restarts:              int32(j.Restarts),
		Preemptions:           int32(j.Preemptions),
	}
	for _, n := range j.Nodes {
		s.Placement = append(s.Placement, string(n))
	}
	if j.Remaining >= 0 && !math.IsInf(j.Remaining, 0) && !math.IsNaN(j.Remaining) {
		r := int64(math.Round(j.Remaining))
		s.RemainingSeconds = &r
	}
	return s
}

// recordOf rebuilds the engine's record of a job from its TrainingJob,
// bringing the counters from the status's AccountedTime up to now: the time
// the controller was away still counts.
func recordOf(tj *v1alpha1.TrainingJob, now time.Time, acc v1alpha1.Accelerators) scheduler.Job {
	s := tj.Status
	phase := api.Phase(s.Phase)
	if s.Phase == v1alpha1.PhaseStarting {
		phase = api.PhaseRunning // the engine does not tell the two apart
	}
	j := scheduler.Job{
		ID:                     jobID(types.NamespacedName{Namespace: tj.Namespace, Name: tj.Name}),
		Spec:                   specOf(tj, acc),
		Phase:                  phase,
		Workers:                int(s.Workers),
		Queue:                  int(s.Queue),
		Submitted:              timeFrom(s.SubmitTime),
		FirstStarted:           timeFrom(s.FirstStartTime),
		LastStarted:            timeFrom(s.LastStartTime),
		Finished:               timeFrom(s.FinishTime),
		WaitingSeconds:         seconds(s.WaitingMillis),
		RunningSeconds:         seconds(s.RunningMillis),
		GPUSeconds:             seconds(s.GPUMillis),
		SinceStartGPUSeconds:   seconds(s.SinceStartGPUMillis),
		LastRunSeconds:         seconds(s.LastRunMillis),
		WaitingSinceRunSeconds: seconds(s.WaitingSinceRunMillis),
		Rescales:               int(s.Rescales),
		Restarts:               int(s.Restarts),
		Preemptions:            int(s.Preemptions),
		Remaining:              -1,
		Message:                s.Message,
	}
	if j.Submitted.IsZero() {
		j.Submitted = tj.CreationTimestamp.Time
	}
	for _, n := range s.Placement {
		j.Nodes = append(j.Nodes, api.NodeName(n))
	}
	if s.RemainingSeconds != nil {
		j.Remaining = float64(*s.RemainingSeconds)
	}
	if s.AccountedTime != nil && now.After(s.AccountedTime.Time) {
		gap := now.Sub(s.AccountedTime.Time).Seconds()
		switch j.Phase {
		case api.PhaseRunning:
			j.RunningSeconds += gap
			j.GPUSeconds += gap * float64(j.Workers*j.Spec.K())
			j.SinceStartGPUSeconds += gap * float64(j.Workers*j.Spec.K())
		case api.PhaseWaiting, api.PhaseSubmitted:
			j.WaitingSeconds += gap
			j.WaitingSinceRunSeconds += gap
		}
	}
	j.Accounted = now
	return j
}

// sameDecision reports whether two statuses differ only in their counters,
// which are rewritten periodically rather than on every round.
func sameDecision(a, b v1alpha1.TrainingJobStatus) bool {
	strip := func(s v1alpha1.TrainingJobStatus) v1alpha1.TrainingJobStatus {
		s.WaitingMillis, s.RunningMillis, s.GPUMillis, s.SinceStartGPUMillis = 0, 0, 0, 0
		s.LastRunMillis, s.WaitingSinceRunMillis = 0, 0
		s.AccountedTime, s.Waiting, s.Running = nil, "", ""
		return s
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// statusPatch is a JSON merge patch that sets the whole status but the
// progress reports: fields that are empty in s are removed rather than left
// as they were.
func statusPatch(s v1alpha1.TrainingJobStatus) ([]byte, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	t := reflect.TypeOf(s)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		switch name {
		case "progress", "gpuTypeTime", "gpuTypeMoves":
			// The REST API's to write (the jobs' reports), and the type
			// choice's.
			continue
		}
		if _, ok := m[name]; !ok {
			m[name] = nil
		}
	}
	return json.Marshal(map[string]any{"status": m})
}

func timeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

func timeFrom(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func millis(s float64) int64 { return int64(math.Round(s * 1000)) }

func seconds(ms int64) float64 { return float64(ms) / 1000 }

// words formats seconds for kubectl: "5m3s".
func words(s float64) string {
	return (time.Duration(math.Round(s)) * time.Second).String()
}
