package compat_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/compat"
)

func TestPyTorchJobExampleConverts(t *testing.T) {
	data, err := os.ReadFile("../../examples/pytorch/elastic-ddp-pytorchjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !compat.IsPyTorchJob(data) {
		t.Fatal("not recognised as a PyTorchJob")
	}
	tj, err := compat.FromPyTorchJob(data)
	if err != nil {
		t.Fatal(err)
	}
	s := tj.Spec
	if got := [4]int32{s.MinWorkers, s.MaxWorkers, s.RequestedWorkers, s.GPUsPerWorker}; got != [4]int32{1, 4, 2, 2} {
		t.Errorf("min, max, requested, GPUs per worker = %v, want [1 4 2 2]", got)
	}
	if tj.Name != "elastic-ddp-kubeflow" || s.GPUType != "nvidia-tesla-v100" || s.Template.Runtime() != "PyTorchJob" {
		t.Errorf("name %q, GPU type %q, runtime %q", tj.Name, s.GPUType, s.Template.Runtime())
	}
	p := s.Template.PyTorchJob
	if p.MaxRestarts == nil || *p.MaxRestarts != 100 || p.RestartPolicy != v1alpha1.PyTorchRestartExitCode {
		t.Errorf("maxRestarts %v, restartPolicy %q", p.MaxRestarts, p.RestartPolicy)
	}
	if err := tj.Validate(); err != nil {
		t.Errorf("the converted job is invalid: %v", err)
	}
	if k, err := s.WorkerGPUs(); err != nil || k != 2 {
		t.Errorf("GPUs per worker %d, %v", k, err)
	}
}

const elasticJob = `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ddp}
spec:
  elasticPolicy: {minReplicas: 1, maxReplicas: 4}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          nodeSelector: {vodascheduler/accelerator: v100}
          containers:
          - name: pytorch
            image: i
            resources: {limits: {nvidia.com/gpu: 4}}
`

// Every field Voda cannot honour is refused by name; nothing is dropped.
func TestPyTorchJobRefusals(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(elasticJob, old) {
			t.Fatalf("%q not in the job", old)
		}
		return strings.Replace(elasticJob, old, new, 1)
	}
	policy := "elasticPolicy: {minReplicas: 1, maxReplicas: 4}"
	cases := map[string]struct{ body, want string }{
		"not elastic":        {edit(policy, "runPolicy: {}"), "spec.elasticPolicy.minReplicas and maxReplicas are required"},
		"a Master":           {edit("    Worker:\n", "    Master:\n      template: {spec: {containers: [{name: pytorch, image: i}]}}\n    Worker:\n"), "spec.pytorchReplicaSpecs.Master"},
		"rendezvous host":    {edit(policy, "elasticPolicy: {minReplicas: 1, maxReplicas: 4, rdzvHost: h}"), "spec.elasticPolicy.rdzvHost"},
		"rendezvous port":    {edit(policy, "elasticPolicy: {minReplicas: 1, maxReplicas: 4, rdzvPort: 1}"), "spec.elasticPolicy.rdzvPort"},
		"etcd rendezvous":    {edit(policy, "elasticPolicy: {minReplicas: 1, maxReplicas: 4, rdzvBackend: etcd}"), `spec.elasticPolicy.rdzvBackend "etcd"`},
		"rdzvConf comma":     {edit(policy, "elasticPolicy: {minReplicas: 1, maxReplicas: 4, rdzvConf: [{key: join_timeout, value: '1,2'}]}"), "spec.template.pytorchJob.rdzvConf.join_timeout"},
		"rdzvConf twice":     {edit(policy, "elasticPolicy: {minReplicas: 1, maxReplicas: 4, rdzvConf: [{key: a, value: '1'}, {key: a, value: '2'}]}"), `key "a" is given twice`},
		"rdzvConf is_host":   {edit(policy, "elasticPolicy: {minReplicas: 1, maxReplicas: 4, rdzvConf: [{key: is_host, value: '1'}]}"), "rdzvConf.is_host"},
		"autoscaling":        {edit(policy, "elasticPolicy: {minReplicas: 1, maxReplicas: 4, metrics: [{type: Resource}]}"), "spec.elasticPolicy.metrics"},
		"run policy":         {edit(policy, policy+"\n  runPolicy: {ttlSecondsAfterFinished: 60}"), "spec.runPolicy.ttlSecondsAfterFinished"},
		"suspended":          {edit(policy, policy+"\n  runPolicy: {suspend: true}"), "spec.runPolicy.suspend"},
		"restart Always":     {edit("      replicas: 2\n", "      replicas: 2\n      restartPolicy: Always\n"), `restartPolicy "Always"`},
		"nproc not a number": {edit(policy, policy+"\n  nprocPerNode: cpu"), `spec.nprocPerNode "cpu"`},
		"nproc disagrees":    {edit(policy, policy+"\n  nprocPerNode: \"2\""), "spec.gpusPerWorker is 2 but"},
		"replicas too many":  {edit("      replicas: 2\n", "      replicas: 9\n"), "requestedWorkers (9) is outside"},
		"no GPU type":        {edit("          nodeSelector: {vodascheduler/accelerator: v100}\n", ""), "nodeSelector vodascheduler/accelerator"},
		"unknown field":      {edit(policy, policy+"\n  extra: 1"), `unknown field "extra"`},
		"wrong version":      {edit("kubeflow.org/v1", "kubeflow.org/v2"), "want a PyTorchJob of kubeflow.org/v1"},
		"node selector":      {edit("          nodeSelector: {vodascheduler/accelerator: v100}\n", "          nodeSelector: {vodascheduler/accelerator: v100, zone: a}\n"), "spec.pytorchReplicaSpecs.Worker.template.spec.nodeSelector.zone"},
		"node name":          {edit("          nodeSelector: {vodascheduler/accelerator: v100}\n", "          nodeSelector: {vodascheduler/accelerator: v100}\n          nodeName: n\n"), "spec.pytorchReplicaSpecs.Worker.template.spec.nodeName"},
		"affinity":           {edit("          nodeSelector: {vodascheduler/accelerator: v100}\n", "          nodeSelector: {vodascheduler/accelerator: v100}\n          affinity: {nodeAffinity: {}}\n"), "spec.pytorchReplicaSpecs.Worker.template.spec.affinity"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			tj, err := compat.FromPyTorchJob([]byte(c.body))
			if err == nil {
				err = tj.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// nprocPerNode "auto" (or unset) takes the worker's GPU limit; a number
// that agrees with it is kept.
func TestPyTorchJobGPUsPerWorker(t *testing.T) {
	for nproc, want := range map[string]int{"": 4, "\n  nprocPerNode: auto": 4, "\n  nprocPerNode: \"4\"": 4} {
		body := strings.Replace(elasticJob, "maxReplicas: 4}", "maxReplicas: 4}"+nproc, 1)
		tj, err := compat.FromPyTorchJob([]byte(body))
		if err != nil {
			t.Fatalf("%q: %v", nproc, err)
		}
		if k, err := tj.Spec.WorkerGPUs(); err != nil || k != want {
			t.Errorf("%q: GPUs per worker %d (%v), want %d", nproc, k, err, want)
		}
		if d := cmp.Diff("ddp", tj.Name); d != "" {
			t.Errorf("name (-want +got): %s", d)
		}
	}
}

func FuzzFromPyTorchJob(f *testing.F) {
	data, err := os.ReadFile("../../examples/pytorch/elastic-ddp-pytorchjob.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(elasticJob))
	f.Add([]byte(strings.Replace(elasticJob, "          nodeSelector: {vodascheduler/accelerator: v100}\n", "          nodeSelector: {vodascheduler/accelerator: v100, zone: a}\n          nodeName: n\n", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tj, err := compat.FromPyTorchJob(data)
		if err != nil {
			return
		}
		// Whatever converts is an elastic PyTorch job within the API's rules.
		s := tj.Spec
		if s.GPUType == "" || s.MinWorkers < 1 || s.MaxWorkers < s.MinWorkers || s.GPUsPerWorker < 0 ||
			(s.RequestedWorkers != 0 && (s.RequestedWorkers < s.MinWorkers || s.RequestedWorkers > s.MaxWorkers)) ||
			s.Template.PyTorchJob == nil || s.Template.MPIJob != nil {
			t.Fatalf("converted into an invalid spec: %+v", s)
		}
	})
}

// rdzvConf is carried into the TrainingJob's template, key by key.
func TestPyTorchJobRendezvousConf(t *testing.T) {
	body := strings.Replace(elasticJob, "maxReplicas: 4}", "maxReplicas: 4, rdzvConf: [{key: last_call_timeout, value: '10'}, {key: join_timeout, value: '900'}]}", 1)
	tj, err := compat.FromPyTorchJob([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"last_call_timeout": "10", "join_timeout": "900"}
	if d := cmp.Diff(want, tj.Spec.Template.PyTorchJob.RendezvousConf); d != "" {
		t.Errorf("rdzvConf (-want +got): %s", d)
	}
	if err := tj.Validate(); err != nil {
		t.Error(err)
	}
}
