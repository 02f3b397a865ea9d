package compat_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/compat"
)

var now = time.Date(2026, 11, 22, 16, 4, 5, 0, time.UTC)

func TestExamplesConvert(t *testing.T) {
	want := map[string][4]int32{ // requested, min, max, epochs
		"tensorflow2-keras-mnist-elastic":            {1, 1, 8, 150},
		"tensorflow2-keras-cifar10-resnet50-elastic": {2, 1, 4, 60},
		"tensorflow2-transformer-elastic":            {2, 1, 4, 30},
	}
	files, err := filepath.Glob("../../examples/original/*.yaml")
	if err != nil || len(files) != len(want) {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !compat.IsMPIJob(data) {
			t.Errorf("%s is not recognised as an MPIJob", f)
		}
		tj, err := compat.FromMPIJob(data, now)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		base := strings.TrimSuffix(filepath.Base(f), ".yaml")
		w := want[base]
		s := tj.Spec
		if got := [4]int32{s.RequestedWorkers, s.MinWorkers, s.MaxWorkers, s.Epochs}; got != w {
			t.Errorf("%s: requested, min, max, epochs = %v, want %v", base, got, w)
		}
		if tj.Name != base+"-20261122-160405" || s.Category != base || s.GPUType != "nvidia-tesla-v100" {
			t.Errorf("%s: name %q, category %q, GPU type %q", base, tj.Name, s.Category, s.GPUType)
		}
		env := map[string]string{}
		for _, e := range s.Template.MPIJob.Launcher.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["JOB_NAME"] != tj.Name {
			t.Errorf("%s: JOB_NAME %q, want %q", base, env["JOB_NAME"], tj.Name)
		}
		if tj.Kind != "TrainingJob" || tj.APIVersion != v1alpha1.GroupVersion.String() {
			t.Errorf("%s: %s %s", base, tj.APIVersion, tj.Kind)
		}
	}
}

// The name uses a 24-hour clock (the original's 12-hour layout made 4 am
// and 4 pm collide) and JOB_NAME is added when the file lacks it.
func TestNameAndJobName(t *testing.T) {
	doc := mpiJob("mnist", "nvidia-tesla-v100", `
            - {name: MIN_NP, value: "1"}
            - {name: MAX_NP, value: "2"}`)
	tj, err := compat.FromMPIJob([]byte(doc), now)
	if err != nil {
		t.Fatal(err)
	}
	if tj.Name != "mnist-20261122-160405" {
		t.Errorf("name %q", tj.Name)
	}
	env := tj.Spec.Template.MPIJob.Launcher.Spec.Containers[0].Env
	if len(env) != 3 || env[2].Name != "JOB_NAME" || env[2].Value != tj.Name {
		t.Errorf("env %v", env)
	}
	if tj.Spec.RequestedWorkers != 0 || tj.Spec.Priority != 0 {
		t.Errorf("defaults: %+v", tj.Spec)
	}
}

// Bad files are rejected with a message naming what to fix.
func TestBadInput(t *testing.T) {
	env := func(min, max string) string {
		return `
            - {name: MIN_NUM_PROC, value: "` + min + `"}
            - {name: MAX_NUM_PROC, value: "` + max + `"}`
	}
	cases := []struct {
		name, doc, want string
	}{
		{"not YAML", "{{{", "not a valid MPIJob"},
		{"wrong kind", strings.Replace(mpiJob("a", "v100", env("1", "2")), "kind: MPIJob", "kind: TFJob", 1), `kind is "TFJob"`},
		{"unknown field", strings.Replace(mpiJob("a", "v100", env("1", "2")), "slotsPerWorker: 1", "slotsPerWorker: 1\n  bogus: 1", 1), `unknown field "bogus"`},
		{"no name", strings.Replace(mpiJob("a", "v100", env("1", "2")), "  name: a\n", "  labels: {}\n", 1), "metadata.name is missing"},
		{"name too long", mpiJob(strings.Repeat("x", 50), "v100", env("1", "2")), "must be no more than 63 characters"},
		{"bad name", mpiJob("Bad_Name", "v100", env("1", "2")), "does not make a valid job name"},
		{"no GPU type", mpiJob("a", "", env("1", "2")), "nodeSelector vodascheduler/accelerator (the GPU type) is missing"},
		{"no min", mpiJob("a", "v100", `
            - {name: MAX_NP, value: "2"}`), "MIN_NUM_PROC is missing"},
		{"no max", mpiJob("a", "v100", `
            - {name: MIN_NP, value: "2"}`), "MAX_NUM_PROC is missing"},
		{"min above max", mpiJob("a", "v100", env("3", "2")), "maxWorkers (2) is below minWorkers (3)"},
		{"zero min", mpiJob("a", "v100", env("0", "2")), "minWorkers is 0"},
		{"negative", mpiJob("a", "v100", env("-1", "2")), `MIN_NUM_PROC="-1": want a whole number`},
		{"not a number", mpiJob("a", "v100", env("1", "two")), `MAX_NUM_PROC="two"`},
		{"fraction", mpiJob("a", "v100", env("1.5", "2")), `MIN_NUM_PROC="1.5"`},
		{"huge", mpiJob("a", "v100", env("1", "99999999999999999999")), `MAX_NUM_PROC="99999999999999999999"`},
		{"requested outside", mpiJob("a", "v100", env("1", "2")+`
            - {name: NP, value: "5"}`), "requestedWorkers (5) is outside"},
		{"bad priority", mpiJob("a", "v100", env("1", "2")+`
            - {name: JOB_PRIORITY, value: "high"}`), `JOB_PRIORITY="high"`},
		{"no launcher", strings.Replace(mpiJob("a", "v100", env("1", "2")), "Launcher:", "Launcherx:", 1), "Launcher with a container is missing"},
		{"max batch without batch", mpiJob("a", "v100", env("1", "2")+`
            - {name: MAX_BATCH_SIZE, value: "1024"}`), "BATCH_SIZE is missing: MAX_BATCH_SIZE lets Voda choose"},
		{"per-GPU batch alone", mpiJob("a", "v100", env("1", "2")+`
            - {name: PER_GPU_MAX_BATCH_SIZE, value: "64"}`), "PER_GPU_MAX_BATCH_SIZE is set without MAX_BATCH_SIZE"},
		{"bad max batch", mpiJob("a", "v100", env("1", "2")+`
            - {name: MAX_BATCH_SIZE, value: "lots"}`), `MAX_BATCH_SIZE="lots"`},
	}
	cases = append(cases, unhonouredCases(env("1", "4"))...)
	for _, c := range cases {
		_, err := compat.FromMPIJob([]byte(c.doc), now)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to say %q", c.name, err, c.want)
		}
	}
}

func FuzzFromMPIJob(f *testing.F) {
	for _, m := range []string{"tensorflow2-keras-mnist-elastic", "tensorflow2-transformer-elastic"} {
		data, err := os.ReadFile("../../examples/original/" + m + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(mpiJob("a", "v100", "")))
	for _, c := range unhonouredCases(`
            - {name: MIN_NUM_PROC, value: "1"}
            - {name: MAX_NUM_PROC, value: "4"}`) {
		f.Add([]byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tj, err := compat.FromMPIJob(data, now)
		if err != nil {
			return
		}
		// Whatever converts is a valid job: the API server's rules hold.
		s := tj.Spec
		if s.GPUType == "" || s.MinWorkers < 1 || s.MaxWorkers < s.MinWorkers || s.Priority < 0 || s.Epochs < 0 ||
			(s.RequestedWorkers != 0 && (s.RequestedWorkers < s.MinWorkers || s.RequestedWorkers > s.MaxWorkers)) ||
			s.Template.MPIJob == nil || len(tj.Name) > 63 || !strings.HasPrefix(tj.Name, s.Category+"-") {
			t.Fatalf("converted an invalid job: %s %+v", tj.Name, s)
		}
	})
}

// unhonouredCases are files with a field Voda would otherwise drop or
// override: each must be refused with a message naming the field.
func unhonouredCases(env string) []struct{ name, doc, want string } {
	doc := mpiJob("a", "v100", env)
	edit := func(old, new string) string { return strings.Replace(doc, old, new, 1) }
	workerSpec := "    Worker:\n      template:\n        spec:\n"
	return []struct{ name, doc, want string }{
		{"two launchers", edit("      replicas: 1\n", "      replicas: 2\n"), "spec.mpiReplicaSpecs.Launcher.replicas is 2"},
		{"worker replicas against NUM_PROC", strings.Replace(edit(workerSpec, "    Worker:\n      replicas: 3\n      template:\n        spec:\n"), "env:", "env:\n            - {name: NUM_PROC, value: \"2\"}", 1),
			"spec.mpiReplicaSpecs.Worker.replicas is 3 but the launcher's NUM_PROC is 2"},
		{"worker replicas outside the range", edit(workerSpec, "    Worker:\n      replicas: 9\n      template:\n        spec:\n"), "requestedWorkers (9) is outside"},
		{"launcher restart policy", edit("      replicas: 1\n", "      replicas: 1\n      restartPolicy: Always\n"), "spec.mpiReplicaSpecs.Launcher.restartPolicy is Always"},
		{"worker restart policy", edit(workerSpec, "    Worker:\n      restartPolicy: OnFailure\n      template:\n        spec:\n"), "spec.mpiReplicaSpecs.Worker.restartPolicy is OnFailure"},
		{"a third replica type", edit("    Worker:\n", "    Server:\n      template: {}\n    Worker:\n"), "spec.mpiReplicaSpecs.Server"},
		{"clean pod policy", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  cleanPodPolicy: None\n"), "spec.cleanPodPolicy is None"},
		{"run policy clean pod policy", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  runPolicy: {cleanPodPolicy: All}\n"), "spec.runPolicy.cleanPodPolicy is All"},
		{"run policy suspend", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  runPolicy: {suspend: true}\n"), "spec.runPolicy.suspend is true"},
		{"run policy TTL", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  runPolicy: {ttlSecondsAfterFinished: 60}\n"), "spec.runPolicy.ttlSecondsAfterFinished is not supported"},
		{"run policy deadline", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  runPolicy: {activeDeadlineSeconds: 60}\n"), "spec.runPolicy.activeDeadlineSeconds is not supported"},
		{"bad backoff limit", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  runPolicy: {backoffLimit: -1}\n"), "spec.runPolicy.backoffLimit is -1"},
		{"main container", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  mainContainer: trainer\n"), "spec.mainContainer is not supported"},
		{"launcher creation policy", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  launcherCreationPolicy: AtStartup\n"), "spec.launcherCreationPolicy is AtStartup"},
		{"launcher as worker", edit("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  runLauncherAsWorker: true\n"), "spec.runLauncherAsWorker"},
		{"status", doc + "status: {replicaStatuses: {}}\n", "status: a new job has no status"},
		{"launcher asks for GPUs", edit("            image: horovod/horovod:0.28.1\n            env:", "            image: horovod/horovod:0.28.1\n            resources: {limits: {nvidia.com/gpu: 1}}\n            env:"), "spec.mpiReplicaSpecs.Launcher.template.spec asks for 1 nvidia.com/gpu"},
		{"worker node name", edit(workerSpec, workerSpec+"          nodeName: gpu-0\n"), "spec.mpiReplicaSpecs.Worker.template.spec.nodeName: Voda chooses each worker's node"},
		{"worker scheduler", edit(workerSpec, workerSpec+"          schedulerName: volcano\n"), "Worker.template.spec.schedulerName"},
		{"worker node selector", edit("            vodascheduler/accelerator:", "            zone: a\n            vodascheduler/accelerator:"), "Worker.template.spec.nodeSelector.zone"},
		{"worker affinity", edit(workerSpec, workerSpec+"          affinity: {podAntiAffinity: {}}\n"), "Worker.template.spec.affinity"},
		{"worker spread", edit(workerSpec, workerSpec+"          topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]\n"), "Worker.template.spec.topologySpreadConstraints"},
		{"worker gate", edit(workerSpec, workerSpec+"          schedulingGates: [{name: other}]\n"), `gate "other"`},
	}
}

// Fields Voda can honour are honoured: Worker.replicas is the requested
// size when NUM_PROC is not set, and runPolicy.backoffLimit is kept.
func TestHonouredFields(t *testing.T) {
	doc := strings.Replace(mpiJob("a", "v100", `
            - {name: MIN_NUM_PROC, value: "1"}
            - {name: MAX_NUM_PROC, value: "4"}`), "    Worker:\n", "    Worker:\n      replicas: 3\n      restartPolicy: Never\n", 1)
	doc = strings.Replace(doc, "  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  cleanPodPolicy: Running\n  runPolicy: {backoffLimit: 4, suspend: false, cleanPodPolicy: Running}\n", 1)
	tj, err := compat.FromMPIJob([]byte(doc), now)
	if err != nil {
		t.Fatal(err)
	}
	if tj.Spec.RequestedWorkers != 3 {
		t.Errorf("requested workers %d, want the replicas, 3", tj.Spec.RequestedWorkers)
	}
	if b := tj.Spec.Template.MPIJob.BackoffLimit; b == nil || *b != 4 {
		t.Errorf("backoff limit %v, want 4", b)
	}
}

// mpiJob is an original-format job file with the given launcher env lines.
func mpiJob(name, gpu, env string) string {
	return `apiVersion: kubeflow.org/v1
kind: MPIJob
metadata:
  name: ` + name + `
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: horovod/horovod:0.28.1
            env:` + env + `
    Worker:
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: "` + gpu + `"
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
`
}

// TestSeveralGPUTypes converts an original-format file whose worker accepts
// several GPU types by a required node affinity on the accelerator label.
func TestSeveralGPUTypes(t *testing.T) {
	env := `
            - {name: MIN_NUM_PROC, value: "1"}
            - {name: MAX_NUM_PROC, value: "4"}`
	affinity := func(op, values string) string {
		return `          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: vodascheduler/accelerator, operator: ` + op + `, values: ` + values + `}
`
	}
	withAffinity := func(op, values string, keepSelector bool) string {
		doc := mpiJob("multi", "v100", env)
		sel := "          nodeSelector:\n            vodascheduler/accelerator: \"v100\"\n"
		repl := affinity(op, values)
		if keepSelector {
			repl = sel + repl
		}
		return strings.Replace(doc, sel, repl, 1)
	}
	tj, err := compat.FromMPIJob([]byte(withAffinity("In", "[v100, p100]", false)), now)
	if err != nil {
		t.Fatal(err)
	}
	if tj.Spec.GPUType != "" || !slices.Equal(tj.Spec.GPUTypes, []string{"v100", "p100"}) || tj.Spec.Template.MPIJob.Worker.Spec.Affinity != nil {
		t.Errorf("two types: gpuType %q, gpuTypes %v, affinity %v", tj.Spec.GPUType, tj.Spec.GPUTypes, tj.Spec.Template.MPIJob.Worker.Spec.Affinity)
	}
	if err := tj.Validate(); err != nil {
		t.Errorf("the converted job does not validate: %v", err)
	}
	tj, err = compat.FromMPIJob([]byte(withAffinity("In", "[k80]", false)), now)
	if err != nil || tj.Spec.GPUType != "k80" || tj.Spec.GPUTypes != nil {
		t.Errorf("one type by affinity: %v, %+v", err, tj)
	}
	for name, c := range map[string]struct {
		doc, want string
	}{
		"both":   {withAffinity("In", "[v100, p100]", true), "names its GPU type twice"},
		"NotIn":  {withAffinity("NotIn", "[k80]", false), "affinity"},
		"twice":  {withAffinity("In", "[v100, v100]", false), `spec.gpuTypes[1] "v100" is listed twice`},
		"spaces": {withAffinity("In", `["a b", v100]`, false), `spec.gpuTypes[0] "a b"`},
	} {
		tj, err := compat.FromMPIJob([]byte(c.doc), now)
		if err == nil && tj != nil {
			err = tj.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to say %q", name, err, c.want)
		}
	}
}

// MAX_BATCH_SIZE and BATCH_SIZE in the launcher's environment let Voda
// choose the batch size; BATCH_SIZE alone stays the script's own.
func TestBatchSizeEnvironment(t *testing.T) {
	env := `
            - {name: MIN_NUM_PROC, value: "1"}
            - {name: MAX_NUM_PROC, value: "4"}
            - {name: BATCH_SIZE, value: "128"}`
	tj, err := compat.FromMPIJob([]byte(mpiJob("a", "v100", env)), now)
	if err != nil || tj.Spec.BatchSize != nil {
		t.Fatalf("BATCH_SIZE alone: %v, batch size %+v; want the job's own", err, tj.Spec.BatchSize)
	}
	tj, err = compat.FromMPIJob([]byte(mpiJob("a", "v100", env+`
            - {name: MAX_BATCH_SIZE, value: "2048"}
            - {name: PER_GPU_MAX_BATCH_SIZE, value: "256"}`)), now)
	if err != nil {
		t.Fatal(err)
	}
	if b := tj.Spec.BatchSize; b == nil || *b != (v1alpha1.BatchSizeSpec{Initial: 128, Max: 2048, PerGPUMax: 256}) {
		t.Errorf("batch size %+v, want 128 to 2048, 256 per GPU", b)
	}
	if err := tj.Validate(); err != nil {
		t.Errorf("the converted job: %v", err)
	}
}
