package compat_test

import (
	"os"
	"path/filepath"
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
	}
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
      replicas: 1
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: "` + gpu + `"
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
`
}
