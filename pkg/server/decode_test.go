package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/server"
)

var submitTime = time.Date(2026, 11, 23, 14, 5, 9, 0, time.UTC)

func TestDecodeJobRefusesBadInput(t *testing.T) {
	n := 0
	for _, c := range badInputs() {
		if c.httpOnly {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			tj, err := server.DecodeJob([]byte(c.body), c.contentType, submitTime)
			if err == nil {
				t.Fatalf("accepted %v", tj.Name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if got := server.StatusOf(err); got != c.code {
				t.Errorf("status %d, want %d", got, c.code)
			}
		})
	}
	if n < 30 {
		t.Errorf("only %d bad inputs reach DecodeJob; the table needs at least 30", n)
	}
}

func TestDecodeJobAccepts(t *testing.T) {
	asJSON, err := yaml.YAMLToJSON([]byte(tj("json")))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, contentType, body string
		wantName                string
		wantRange               [3]int32
	}{
		{"TrainingJob YAML", "application/yaml", tj("yaml"), "yaml", [3]int32{1, 4, 2}},
		{"TrainingJob JSON", "application/json; charset=utf-8", string(asJSON), "json", [3]int32{1, 4, 2}},
		{"no content type", "", tj("plain"), "plain", [3]int32{1, 4, 2}},
		{"leading comment document", "text/yaml", "# a job\n---\n" + tj("commented"), "commented", [3]int32{1, 4, 2}},
		{"original MPIJob", "application/x-yaml", mpijob("mnist"), "mnist-20261123-140509", [3]int32{1, 4, 2}},
		{"TrainingJob of the PyTorch runtime", "application/yaml", ptj("ddp"), "ddp", [3]int32{1, 4, 0}},
		{"elastic PyTorchJob", "application/yaml", pytorchjob("ddp"), "ddp", [3]int32{1, 4, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := server.DecodeJob([]byte(c.body), c.contentType, submitTime)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != c.wantName {
				t.Errorf("name %q, want %q", got.Name, c.wantName)
			}
			r := [3]int32{got.Spec.MinWorkers, got.Spec.MaxWorkers, got.Spec.RequestedWorkers}
			if diff := cmp.Diff(c.wantRange, r); diff != "" {
				t.Errorf("min, max, requested (-want +got):\n%s", diff)
			}
			if got.Spec.GPUType != testGPUType {
				t.Errorf("GPU type %q", got.Spec.GPUType)
			}
		})
	}
}

// FuzzDecodeJob feeds arbitrary bodies to the decoder: it must never panic,
// and what it accepts must be a valid job.
func FuzzDecodeJob(f *testing.F) {
	f.Add([]byte(tj("seed")), "application/yaml")
	f.Add([]byte(mpijob("seed")), "")
	f.Add([]byte(ptj("seed")), "application/yaml")
	f.Add([]byte(pytorchjob("seed")), "application/yaml")
	f.Add([]byte(`{"kind":"TrainingJob","spec":{"minWorkers":1}}`), "application/json")
	for _, c := range badInputs() {
		if len(c.body) < 4096 {
			f.Add([]byte(c.body), c.contentType)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		tj, err := server.DecodeJob(body, contentType, submitTime)
		if err != nil {
			if code := server.StatusOf(err); code < 400 || code > 499 {
				t.Fatalf("status %d for a bad body: %v", code, err)
			}
			return
		}
		if err := tj.Validate(); err != nil {
			t.Fatalf("accepted an invalid job: %v", err)
		}
	})
}

// What a worker template asks for is what Voda counts: a job that names no
// gpusPerWorker takes the template's GPUs, in both formats.
func TestDecodeJobCountsTheTemplatesGPUs(t *testing.T) {
	for name, body := range map[string]string{
		"TrainingJob":     tj("two", workerImage, workerImage+twoGPUs),
		"original MPIJob": mpijob("two", workerImage, workerImage+twoGPUs),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := server.DecodeJob([]byte(body), "application/yaml", submitTime)
			if err != nil {
				t.Fatal(err)
			}
			if k, err := got.Spec.WorkerGPUs(); err != nil || k != 2 {
				t.Errorf("GPUs per worker = %d, %v; want 2", k, err)
			}
		})
	}
}
