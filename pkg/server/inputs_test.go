package server_test

import (
	"fmt"
	"net/http"
	"strings"
)

// testGPUType is the GPU type of the test jobs; the integration test labels
// nodes with it.
const testGPUType = "api-gpu"

// validTJ is a TrainingJob the server accepts; the bad inputs are variants.
const validTJ = `apiVersion: vodascheduler.io/v1alpha1
kind: TrainingJob
metadata:
  name: NAME
spec:
  gpuType: api-gpu
  minWorkers: 1
  maxWorkers: 4
  requestedWorkers: 2
  epochs: 3
  template:
    mpiJob:
      launcher:
        spec:
          containers:
          - name: launcher
            image: busybox
      worker:
        spec:
          containers:
          - name: worker
            image: busybox
`

// workerImage is the worker container's last line in validTJ; twoGPUs
// follows it to ask for 2 GPUs per worker.
const (
	workerImage = "          - name: worker\n            image: busybox\n"
	twoGPUs     = "            resources: {limits: {nvidia.com/gpu: 2}}\n"
	// workerSpec opens the worker's pod spec in validTJ.
	workerSpec = "      worker:\n        spec:\n"
)

// validPTJ is a TrainingJob of the PyTorch runtime the server accepts.
const validPTJ = `apiVersion: vodascheduler.io/v1alpha1
kind: TrainingJob
metadata:
  name: NAME
spec:
  gpuType: api-gpu
  minWorkers: 1
  maxWorkers: 4
  gpusPerWorker: 2
  template:
    pytorchJob:
      worker:
        spec:
          containers:
          - name: pytorch
            image: busybox
`

// validPyTorchJob is a plain Kubeflow PyTorchJob with an elastic policy.
const validPyTorchJob = `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: NAME
spec:
  elasticPolicy: {rdzvBackend: c10d, minReplicas: 1, maxReplicas: 4}
  nprocPerNode: "2"
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: api-gpu
          containers:
          - name: pytorch
            image: busybox
`

// validMPIJob is a job in the original Voda's format.
const validMPIJob = `apiVersion: kubeflow.org/v1
kind: MPIJob
metadata:
  name: NAME
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - name: launcher
            image: busybox
            env:
            - {name: NUM_PROC, value: "2"}
            - {name: MIN_NUM_PROC, value: "1"}
            - {name: MAX_NUM_PROC, value: "4"}
            - {name: EPOCHS, value: "3"}
    Worker:
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: api-gpu
          containers:
          - name: worker
            image: busybox
`

func tj(name string, edits ...string) string     { return edit(validTJ, name, edits...) }
func mpijob(name string, edits ...string) string { return edit(validMPIJob, name, edits...) }
func ptj(name string, edits ...string) string    { return edit(validPTJ, name, edits...) }
func pytorchjob(name string, edits ...string) string {
	return edit(validPyTorchJob, name, edits...)
}

// edit names a template and applies old, new replacement pairs, each of
// which must match.
func edit(tmpl, name string, pairs ...string) string {
	s := strings.Replace(tmpl, "NAME", name, 1)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			panic(fmt.Sprintf("edit: %q not in the template", pairs[i]))
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// badInput is a request body the API must refuse.
type badInput struct {
	name        string
	contentType string
	body        string
	code        int
	// want is a part of the error message that names the problem.
	want string
	// httpOnly inputs are refused by the server around DecodeJob, not by
	// it (size, namespace, GPU type, submitter).
	httpOnly bool
}

// billionLaughs is a YAML alias bomb: a few hundred bytes that expand into
// billions of nodes if aliases are followed without a limit.
const billionLaughs = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
kind: TrainingJob
`

// badInputs are the malformed and hostile job submissions of the tests.
func badInputs() []badInput {
	yamlCT, jsonCT := "application/yaml", "application/json"
	return []badInput{
		{"empty body", yamlCT, "", 400, "the body is empty", false},
		{"only whitespace and comments", yamlCT, "  \n# nothing\n", 400, "the body is empty", false},
		{"truncated JSON", jsonCT, `{"kind": "TrainingJob", "spec": {`, 400, "not valid YAML or JSON", false},
		{"malformed YAML", yamlCT, "kind: [TrainingJob\nspec: {", 400, "not valid YAML or JSON", false},
		{"a YAML list, not an object", yamlCT, "- kind: TrainingJob\n", 400, "not a YAML or JSON object", false},
		{"a scalar", yamlCT, "hello\n", 400, "not a YAML or JSON object", false},
		{"two documents", yamlCT, tj("a") + "---\n" + tj("b"), 400, "holds 2 documents", false},
		{"kind missing", yamlCT, strings.Replace(tj("nokind"), "kind: TrainingJob\n", "", 1), 400, "kind is missing", false},
		{"wrong kind", yamlCT, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", 400, `kind "Deployment" is not accepted`, false},
		{"wrong apiVersion", yamlCT, tj("v2", "vodascheduler.io/v1alpha1", "vodascheduler.io/v2"), 400, `apiVersion is "vodascheduler.io/v2"`, false},
		{"GPU type missing", yamlCT, tj("nogpu", "  gpuType: api-gpu\n", ""), 400, "spec.gpuType is missing", false},
		{"GPU type with spaces", yamlCT, tj("badgpu", "gpuType: api-gpu", "gpuType: nvidia tesla"), 400, `spec.gpuType "nvidia tesla"`, false},
		{"gpuType and gpuTypes", yamlCT, tj("both", "gpuType: api-gpu", "gpuType: api-gpu\n  gpuTypes: [api-gpu, nvidia-tesla-v100]"), 400, "spec.gpuType and spec.gpuTypes are both set", false},
		{"gpuTypes twice", yamlCT, tj("twice", "gpuType: api-gpu", "gpuTypes: [api-gpu, api-gpu]"), 400, `spec.gpuTypes[1] "api-gpu" is listed twice`, false},
		{"gpuTypes unknown type", yamlCT, tj("unknowntype", "gpuType: api-gpu", "gpuTypes: [api-gpu, h100]"), 400, `spec.gpuTypes[1] "h100": no node has this GPU type`, true},
		{"speed for an unlisted type", yamlCT, tj("speedx", "gpuType: api-gpu", "gpuTypes: [api-gpu, nvidia-tesla-v100]\n  gpuTypeSpeeds: {k80: 1}"), 400, "spec.gpuTypeSpeeds.k80: k80 is not in spec.gpuTypes", false},
		{"speed not positive", yamlCT, tj("speed0", "gpuType: api-gpu", "gpuTypes: [api-gpu, nvidia-tesla-v100]\n  gpuTypeSpeeds: {api-gpu: 0}"), 400, "spec.gpuTypeSpeeds.api-gpu is 0: a speed must be positive", false},
		{"gpuTypes with a type selector", yamlCT, tj("typesel", "gpuType: api-gpu", "gpuTypes: [api-gpu, nvidia-tesla-v100]", "          containers:\n          - name: worker\n", "          nodeSelector: {vodascheduler/accelerator: api-gpu}\n          containers:\n          - name: worker\n"), 400, "nodeSelector.vodascheduler/accelerator", false},
		{"min above max", yamlCT, tj("minmax", "minWorkers: 1", "minWorkers: 5", "requestedWorkers: 2", "requestedWorkers: 0"), 400, "maxWorkers (4) is below minWorkers (5)", false},
		{"min zero", yamlCT, tj("minzero", "minWorkers: 1", "minWorkers: 0"), 400, "minWorkers is 0, must be at least 1", false},
		{"requested outside range", yamlCT, tj("req", "requestedWorkers: 2", "requestedWorkers: 9"), 400, "requestedWorkers (9) is outside", false},
		{"negative priority", yamlCT, tj("prio", "epochs: 3", "epochs: 3\n  priority: -1"), 400, "priority is -1", false},
		{"negative epochs", yamlCT, tj("epochs", "epochs: 3", "epochs: -3"), 400, "epochs is -3", false},
		{"non-integer workers", yamlCT, tj("word", "maxWorkers: 4", "maxWorkers: four"), 400, "not a valid TrainingJob", false},
		{"fractional workers", yamlCT, tj("frac", "maxWorkers: 4", "maxWorkers: 2.5"), 400, "not a valid TrainingJob", false},
		{"workers beyond int32", yamlCT, tj("huge", "maxWorkers: 4", "maxWorkers: 99999999999"), 400, "not a valid TrainingJob", false},
		{"unknown top-level field", yamlCT, tj("unk") + "extra: 1\n", 400, `unknown field "extra"`, false},
		{"unknown spec field", yamlCT, tj("unkspec", "  epochs: 3", "  epochs: 3\n  gpus: 4"), 400, `unknown field "gpus"`, false},
		{"duplicate field", yamlCT, tj("dup", "  epochs: 3", "  epochs: 3\n  epochs: 4"), 400, "not a valid TrainingJob", false},
		{"name missing", yamlCT, tj("", "  name: \n", ""), 400, "metadata.name is missing", false},
		{"name too long", yamlCT, tj(strings.Repeat("a", 64)), 400, "must be no more than 63 characters", false},
		{"name not a DNS label", yamlCT, tj("My_Job"), 400, `metadata.name "My_Job"`, false},
		{"metadata from kubectl get", yamlCT, tj("got", "  name: got\n", "  name: got\n  resourceVersion: \"123\"\n  uid: 6f1c\n  creationTimestamp: null\n"), 400,
			"metadata.uid, metadata.resourceVersion: set by the API server", false},
		{"finalizers", yamlCT, tj("fin", "  name: fin\n", "  name: fin\n  finalizers: [example.com/keep]\n"), 400, "metadata.finalizers: set by", false},
		{"owner references", yamlCT, tj("own", "  name: own\n", "  name: own\n  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: x, uid: u}]\n"), 400, "metadata.ownerReferences", false},
		{"MPIJob with finalizers", yamlCT, mpijob("mfin", "  name: mfin\n", "  name: mfin\n  finalizers: [example.com/keep]\n"), 400, "metadata.finalizers", false},
		{"status set", yamlCT, tj("status") + "status:\n  phase: Running\n", 400, "status is set", false},
		{"no template", yamlCT, tj("notmpl", "  template:\n", "  templat:\n"), 400, `unknown field "templat"`, false},
		{"no runtime", yamlCT, strings.SplitAfter(tj("norun"), "  template:\n")[0] + "    {}\n", 400, "spec.template sets no runtime", false},
		{"launcher without containers", yamlCT, tj("nolaunch", "          containers:\n          - name: launcher\n            image: busybox\n", "          containers: []\n"), 400, "launcher has no container", false},
		{"MPIJob negative NUM_PROC", yamlCT, mpijob("neg", `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "-1"}`), 400, `NUM_PROC="-1": want a whole number`, false},
		{"MPIJob non-integer MIN_NUM_PROC", yamlCT, mpijob("abc", `value: "1"}`, `value: "abc"}`), 400, `MIN_NUM_PROC="abc"`, false},
		{"MPIJob without MAX_NUM_PROC", yamlCT, mpijob("nomax", `            - {name: MAX_NUM_PROC, value: "4"}`+"\n", ""), 400, "MAX_NUM_PROC is missing", false},
		{"MPIJob without GPU type", yamlCT, mpijob("nosel", "          nodeSelector:\n            vodascheduler/accelerator: api-gpu\n", ""), 400, "vodascheduler/accelerator (the GPU type) is missing", false},
		{"MPIJob min above max", yamlCT, mpijob("mm", `{name: MIN_NUM_PROC, value: "1"}`, `{name: MIN_NUM_PROC, value: "8"}`), 400, "maxWorkers (4) is below minWorkers (8)", false},
		{"MPIJob name too long", yamlCT, mpijob(strings.Repeat("m", 50)), 400, "does not make a valid job name", false},
		{"template GPUs disagree with gpusPerWorker", yamlCT, tj("kmis", "  epochs: 3", "  epochs: 3\n  gpusPerWorker: 4", workerImage, workerImage+twoGPUs), 400,
			"spec.gpusPerWorker is 4 but spec.template.mpiJob.worker.spec asks for 2 nvidia.com/gpu per worker", false},
		{"worker asks for no GPU", yamlCT, tj("kzero", workerImage, workerImage+"            resources: {limits: {nvidia.com/gpu: 0}}\n"), 400,
			"asks for 0 nvidia.com/gpu: a worker needs at least one", false},
		{"gpusPerWorker too large", yamlCT, tj("kbig", "  epochs: 3", "  epochs: 3\n  gpusPerWorker: 2000"), 400, "spec.gpusPerWorker is 2000", false},
		{"negative gpusPerWorker", yamlCT, tj("kneg", "  epochs: 3", "  epochs: 3\n  gpusPerWorker: -1"), 400, "spec.gpusPerWorker is -1", false},
		{"batch range upside down", yamlCT, tj("bdown", "  epochs: 3", "  epochs: 3\n  batchSize: {initial: 256, max: 128}"), 400,
			"spec.batchSize.max 128 is below spec.batchSize.initial 256", false},
		{"batch too small for the GPUs", yamlCT, tj("bsmall", "  epochs: 3", "  epochs: 3\n  batchSize: {initial: 1, max: 1}"), 400,
			"spec.batchSize.max 1 cannot give each of the", false},
		{"batch the GPUs cannot hold", yamlCT, tj("bhold", "  epochs: 3", "  epochs: 3\n  batchSize: {initial: 4096, max: 4096, perGPUMax: 16}"), 400,
			"spec.batchSize.initial 4096 does not fit the", false},
		{"batch field unknown", yamlCT, tj("bfield", "  epochs: 3", "  epochs: 3\n  batchSize: {initial: 32, max: 64, min: 16}"), 400, "min", false},
		{"both runtimes", yamlCT, ptj("both", "    pytorchJob:\n", "    mpiJob:\n      launcher: {spec: {containers: [{name: l, image: i}]}}\n      worker: {spec: {containers: [{name: w, image: i}]}}\n    pytorchJob:\n"), 400,
			"spec.template sets both mpiJob and pytorchJob", false},
		{"PyTorch rendezvous setting with a comma", yamlCT, ptj("rdzv", "    pytorchJob:\n", "    pytorchJob:\n      rdzvConf: {join_timeout: \"1,2\"}\n"), 400,
			"spec.template.pytorchJob.rdzvConf.join_timeout", false},
		{"PyTorch worker without a pytorch container", yamlCT, ptj("noname", "          - name: pytorch\n", "          - name: trainer\n"), 400,
			`has no container named "pytorch"`, false},
		{"PyTorchJob not elastic", yamlCT, pytorchjob("rigid", "  elasticPolicy: {rdzvBackend: c10d, minReplicas: 1, maxReplicas: 4}\n", ""), 400,
			"spec.elasticPolicy.minReplicas and maxReplicas are required", false},
		{"PyTorchJob with a status", yamlCT, pytorchjob("pst") + "status:\n  conditions: []\n  startTime: \"2026-01-01T00:00:00Z\"\n", 400, "status: a new job has no status", false},
		{"PyTorchJob with an autoscaler", yamlCT, pytorchjob("hpa", "maxReplicas: 4}", "maxReplicas: 4, metrics: [{type: Resource}]}"), 400,
			"spec.elasticPolicy.metrics: Voda decides the workers", false},
		{"PyTorchJob with a Master", yamlCT, pytorchjob("master", "    Worker:\n", "    Master: {template: {spec: {containers: [{name: pytorch, image: i}]}}}\n    Worker:\n"), 400,
			"spec.pytorchReplicaSpecs.Master", false},
		{"worker on a named node", yamlCT, tj("nodename", workerSpec, workerSpec+"          nodeName: gpu-0\n"), 400,
			"spec.template.mpiJob.worker.spec.nodeName: Voda chooses each worker's node", false},
		{"worker with its own scheduler", yamlCT, tj("sched", workerSpec, workerSpec+"          schedulerName: volcano\n"), 400,
			"spec.template.mpiJob.worker.spec.schedulerName", false},
		{"worker with a further node selector", yamlCT, tj("zone", workerSpec, workerSpec+"          nodeSelector: {zone: a}\n"), 400,
			"spec.template.mpiJob.worker.spec.nodeSelector.zone", false},
		{"worker selecting another GPU type", yamlCT, tj("othertype", workerSpec, workerSpec+"          nodeSelector: {vodascheduler/accelerator: v100}\n"), 400,
			`nodeSelector.vodascheduler/accelerator: is "v100" but spec.gpuType is "api-gpu"`, false},
		{"worker with node affinity", yamlCT, tj("aff", workerSpec, workerSpec+"          affinity: {nodeAffinity: {}}\n"), 400,
			"spec.template.mpiJob.worker.spec.affinity", false},
		{"worker with spread constraints", yamlCT, tj("spread", workerSpec, workerSpec+"          topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]\n"), 400,
			"spec.template.mpiJob.worker.spec.topologySpreadConstraints", false},
		{"worker with another scheduling gate", yamlCT, tj("gate", workerSpec, workerSpec+"          schedulingGates: [{name: example.com/wait}]\n"), 400,
			`gate "example.com/wait"`, false},
		{"launcher asking for a GPU", yamlCT, tj("lgpu", "          - name: launcher\n            image: busybox\n", "          - name: launcher\n            image: busybox\n            resources: {limits: {nvidia.com/gpu: 1}}\n"), 400,
			"spec.template.mpiJob.launcher.spec asks for 1 nvidia.com/gpu: only workers hold", false},
		{"MPIJob with two launchers", yamlCT, mpijob("twol", "    Launcher:\n", "    Launcher:\n      replicas: 2\n"), 400,
			"spec.mpiReplicaSpecs.Launcher.replicas is 2", false},
		{"MPIJob workers disagreeing with NUM_PROC", yamlCT, mpijob("wrep", "    Worker:\n", "    Worker:\n      replicas: 3\n"), 400,
			"spec.mpiReplicaSpecs.Worker.replicas is 3 but the launcher's NUM_PROC is 2", false},
		{"MPIJob with a TTL", yamlCT, mpijob("ttl", "spec:\n", "spec:\n  runPolicy: {ttlSecondsAfterFinished: 60}\n"), 400,
			"spec.runPolicy.ttlSecondsAfterFinished is not supported", false},
		{"YAML alias bomb", yamlCT, billionLaughs, 400, "excessive aliasing", false},
		{"deeply nested JSON", jsonCT, strings.Repeat("[", 100000) + strings.Repeat("]", 100000), 400, "exceeded max depth", false},
		{"plain text content type", "text/plain", tj("text"), 415, `Content-Type "text/plain" is not accepted`, false},
		{"form content type", "application/x-www-form-urlencoded", "a=b", 415, "is not accepted", false},
		{"malformed content type", "application/;;", tj("ct"), 415, "Content-Type", false},

		{"body over the size limit", yamlCT, tj("big") + "# " + strings.Repeat("x", 2<<20) + "\n", http.StatusRequestEntityTooLarge, "larger than", true},
		{"another namespace", yamlCT, tj("ns", "  name: ns\n", "  name: ns\n  namespace: kube-system\n"), 400, `metadata.namespace is "kube-system"`, true},
		{"GPU type no node has", yamlCT, tj("nonode", "gpuType: api-gpu", "gpuType: nvidia-h100"), 400, `spec.gpuType "nvidia-h100": no node has this GPU type`, true},
		// Another vendor's accelerator: no node of the job's type offers it
		// (the server knows which resource each type schedules).
		{"PyTorch worker asking for AMD GPUs on an NVIDIA type", yamlCT, ptj("amd", "            image: busybox\n", "            image: busybox\n            resources: {limits: {amd.com/gpu: 2}}\n"), 400,
			"spec.template.pytorchJob.worker.spec.containers[0].resources.limits[amd.com/gpu]: amd.com/gpu is another GPU type's or vendor's accelerator; the job's GPU type schedules nvidia.com/gpu", true},
		{"original MPIJob asking for Gaudi", yamlCT, mpijob("gaudi", "          - name: worker\n            image: busybox\n", "          - name: worker\n            image: busybox\n            resources: {limits: {habana.ai/gaudi: 1}}\n"), 400,
			"resources.limits[habana.ai/gaudi]: habana.ai/gaudi is another GPU type's or vendor's accelerator", true},
		{"plain PyTorchJob asking for Neuron cores", yamlCT, pytorchjob("neuron", "          - name: pytorch\n            image: busybox\n", "          - name: pytorch\n            image: busybox\n            resources: {requests: {aws.amazon.com/neuroncore: 2}}\n"), 400,
			"resources.requests[aws.amazon.com/neuroncore]: aws.amazon.com/neuroncore is another GPU type's or vendor's accelerator", true},
		{"submitting as another user", yamlCT, tj("other", "  epochs: 3", "  epochs: 3\n  submitter: mallory"), 403, `spec.submitter is "mallory"`, true},
		// Rights in the API's namespace that the submitter was never given.
		{"another service account", yamlCT, tj("sa", workerSpec, workerSpec+"          serviceAccountName: voda\n"), 403,
			`spec.template.mpiJob.worker.spec.serviceAccountName: "voda": the job's pods would run as that service account`, true},
		{"launcher's service account", yamlCT, tj("lsa", "      launcher:\n        spec:\n", "      launcher:\n        spec:\n          serviceAccount: voda\n"), 403,
			`spec.template.mpiJob.launcher.spec.serviceAccount: "voda"`, true},
		{"PyTorch worker's service account", yamlCT, ptj("ptsa", "      worker:\n        spec:\n", "      worker:\n        spec:\n          serviceAccountName: voda\n"), 403,
			`spec.template.pytorchJob.worker.spec.serviceAccountName: "voda"`, true},
		{"a secret volume", yamlCT, tj("secvol", workerSpec, workerSpec+"          volumes: [{name: k, secret: {secretName: voda-progress-key}}]\n"), 403,
			`spec.template.mpiJob.worker.spec.volumes[0].secret: mounts secret "voda-progress-key"`, true},
		{"a projected token", yamlCT, tj("token", workerSpec, workerSpec+"          volumes: [{name: t, projected: {sources: [{serviceAccountToken: {path: t}}]}}]\n"), 403,
			"volumes[0].projected.sources[0].serviceAccountToken: mounts a service account token", true},
		{"a secret in the environment", yamlCT, tj("secenv", workerImage, workerImage+"            env: [{name: K, valueFrom: {secretKeyRef: {name: voda-progress-key, key: key}}}]\n"), 403,
			`containers[0].env[0].valueFrom.secretKeyRef: reads secret "voda-progress-key"`, true},
		{"the node's file system", yamlCT, tj("host", workerSpec, workerSpec+"          volumes: [{name: h, hostPath: {path: /}}]\n"), 403,
			"volumes[0].hostPath: mounts the node's /", true},
		{"a privileged container", yamlCT, tj("priv", workerImage, workerImage+"            securityContext: {privileged: true}\n"), 403,
			"containers[0].securityContext.privileged: a privileged container holds the node: jobs submitted here run in namespace", true},
	}
}
