package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
)

// listSchedulers is GET /api/v1/schedulers.
func (s *Server) listSchedulers(w http.ResponseWriter, r *http.Request, _ User) error {
	all, err := s.schedulers(r.Context())
	if err != nil {
		return err
	}
	out := rest.SchedulerList{Items: make([]rest.Scheduler, 0, len(all))}
	for _, t := range slices.Sorted(maps.Keys(all)) {
		out.Items = append(out.Items, all[t])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// clusterRead is what the API and the dashboard read of the cluster at
// one moment: the GPU nodes, the jobs, the GPUs other pods hold per node
// and the runtime settings.
type clusterRead struct {
	nodes    []corev1.Node
	jobs     []v1alpha1.TrainingJob
	other    map[string]int
	settings map[string]string
}

// readCluster lists what schedulers and the dashboard are built from.
func (s *Server) readCluster(ctx context.Context) (*clusterRead, error) {
	r := client.Reader(s.c)
	if s.o.Cache != nil {
		r = s.o.Cache
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.HasLabels{v1alpha1.AcceleratorLabel}); err != nil {
		return nil, kubeError(err, "nodes", "")
	}
	var jobs v1alpha1.TrainingJobList
	if err := r.List(ctx, &jobs, client.InNamespace(s.o.Namespace)); err != nil {
		return nil, kubeError(err, "jobs", "")
	}
	data, err := s.settingsData(ctx)
	if err != nil {
		return nil, err
	}
	nodeType := map[string]string{}
	for i := range nodes.Items {
		nodeType[nodes.Items[i].Name] = nodes.Items[i].Labels[v1alpha1.AcceleratorLabel]
	}
	resOf := func(node string) corev1.ResourceName { return s.o.Accelerators.Of(nodeType[node]) }
	var other map[string]int
	if s.o.OtherGPUs != nil {
		other, err = s.o.OtherGPUs(ctx, resOf)
	} else {
		other, err = kube.ForeignGPUsByNode(ctx, s.c, resOf)
	}
	if err != nil {
		return nil, kubeError(err, "pods", "")
	}
	return &clusterRead{nodes: nodes.Items, jobs: jobs.Items, other: other, settings: data}, nil
}

// schedulers describes every GPU type that has a node or a job, from the
// nodes, the jobs, the other pods on the nodes and the settings ConfigMap,
// the way the controller sees them.
func (s *Server) schedulers(ctx context.Context) (map[string]rest.Scheduler, error) {
	cr, err := s.readCluster(ctx)
	if err != nil {
		return nil, err
	}
	return s.schedulersOf(cr), nil
}

// schedulersOf describes the GPU types of what was read.
func (s *Server) schedulersOf(cr *clusterRead) map[string]rest.Scheduler {
	nodes, data, other := cr.nodes, cr.settings, cr.other
	out := map[string]rest.Scheduler{}
	get := func(t string) rest.Scheduler {
		sc, ok := out[t]
		if !ok {
			sc = rest.Scheduler{GPUType: t, Jobs: map[string]int{}}
			set, algo, _ := kube.SchedulerSettings{}.Resolve(s.defaults())
			if v, ok := data[t]; ok {
				if user, ualgo, err := kube.ResolveEntry(v, s.defaults()); err != nil {
					sc.SettingsError = err.Error()
				} else {
					set, algo = user, ualgo
				}
			}
			sc.Algorithm, sc.RateLimit, sc.PolicyParams = set.Algorithm, set.RateLimit, set.PolicyParams
			sc.Parameters = algo.Changed(set.Algorithm)
		}
		return sc
	}
	for i := range nodes {
		t := nodes[i].Labels[v1alpha1.AcceleratorLabel]
		sc := get(t)
		if gt, gpus := kube.NodeGPUs(&nodes[i], s.o.Accelerators); gt != "" {
			sc.Nodes++
			sc.GPUs += gpus
			sc.OtherGPUs += min(other[nodes[i].Name], gpus)
		}
		out[t] = sc
	}
	for i := range cr.jobs {
		tj := &cr.jobs[i]
		t := tj.CurrentGPUType()
		if acc := tj.Spec.AcceptedGPUTypes(); t == "" && len(acc) > 0 {
			t = acc[0] // a type not chosen yet: its first
		}
		sc := get(t)
		p := phaseOf(tj)
		sc.Jobs[string(p)]++
		if p == v1alpha1.PhaseRunning || p == v1alpha1.PhaseStarting {
			sc.AllocatedGPUs += int(tj.Status.Workers) * max(int(tj.Status.GPUsPerWorker), 1)
		}
		out[t] = sc
	}
	return out
}

// settingsFresh is how long after this server wrote the settings they
// are read from the API server rather than the cache: the cache shows a
// write within moments, far less while the API server is idle.
const settingsFresh = 30 * time.Second

// settingsData is the data of the settings ConfigMap; none if it does not
// exist. It comes from the cache, as the controller reads it, unless this
// server wrote it within settingsFresh: the page a change leads to shows
// the change.
func (s *Server) settingsData(ctx context.Context) (map[string]string, error) {
	r := client.Reader(s.c)
	if s.o.Cache != nil && time.Since(time.Unix(0, s.settingsWritten.Load())) > settingsFresh {
		r = s.o.Cache
	}
	var cm corev1.ConfigMap
	err := r.Get(ctx, types.NamespacedName{Namespace: s.o.ConfigNamespace, Name: kube.ConfigMapName}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, kubeError(err, "ConfigMap", kube.ConfigMapName)
	}
	return cm.Data, nil
}

// putScheduler is PUT /api/v1/schedulers/{gpuType}: it writes the GPU
// type's entry of the settings ConfigMap, which the controller applies
// within moments.
func (s *Server) putScheduler(w http.ResponseWriter, r *http.Request, u User) error {
	if !s.admin(u) {
		return errorf(http.StatusForbidden, "you (%s) may not change schedulers: that takes membership of %s", u.Name, strings.Join(s.o.AdminGroups, " or "))
	}
	t := r.PathValue("gpuType")
	if msgs := validation.IsConfigMapKey(t); len(msgs) > 0 || len(validation.IsValidLabelValue(t)) > 0 {
		return errorf(http.StatusBadRequest, "%q is not a GPU type", t)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return errorf(http.StatusUnsupportedMediaType, "Content-Type %q is not accepted: send application/json", ct)
	}
	var up rest.SchedulerUpdate
	if err := decodeJSONBody(r, &up, `a scheduler update {"algorithm": NAME, "rateLimit": DURATION, "policyParams": [NAME=VALUE, ...]}`); err != nil {
		return err
	}
	sc, err := s.updateScheduler(r.Context(), u, t, up)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sc)
	return nil
}

// updateScheduler checks and applies an admin's update of a GPU type's
// settings, for the API and the dashboard, and returns the type's
// scheduler as it then is.
func (s *Server) updateScheduler(ctx context.Context, u User, t string, up rest.SchedulerUpdate) (rest.Scheduler, error) {
	if !s.admin(u) {
		return rest.Scheduler{}, errorf(http.StatusForbidden, "you (%s) may not change schedulers: that takes membership of %s", u.Name, strings.Join(s.o.AdminGroups, " or "))
	}
	if up.Algorithm == "" && up.RateLimit == "" && up.PolicyParams == nil {
		return rest.Scheduler{}, errorf(http.StatusBadRequest, "nothing to change: set algorithm, rateLimit, policyParams or several")
	}
	if _, _, err := settingsOf(up).Resolve(s.defaults()); err != nil {
		return rest.Scheduler{}, errorf(http.StatusBadRequest, "%v", err)
	}
	all, err := s.schedulers(ctx)
	if err != nil {
		return rest.Scheduler{}, err
	}
	if _, ok := all[t]; !ok {
		return rest.Scheduler{}, errorf(http.StatusNotFound, "no node or job has GPU type %q; the cluster has %s", t, strings.Join(slices.Sorted(maps.Keys(all)), ", "))
	}
	if err := s.writeSettings(ctx, t, up); err != nil {
		return rest.Scheduler{}, err
	}
	if all, err = s.schedulers(ctx); err != nil {
		return rest.Scheduler{}, err
	}
	return all[t], nil
}

// settingsOf is an update as a ConfigMap entry; parameters left out are
// none.
func settingsOf(up rest.SchedulerUpdate) kube.SchedulerSettings {
	out := kube.SchedulerSettings{Algorithm: up.Algorithm, RateLimit: up.RateLimit}
	if up.PolicyParams != nil && len(*up.PolicyParams) > 0 {
		out.PolicyParams = slices.Clone(*up.PolicyParams)
	}
	return out
}

// defaults are the controller's settings, which the ConfigMap's entries
// override.
func (s *Server) defaults() kube.Defaults {
	return kube.Defaults{Policy: s.o.DefaultAlgorithm, RateLimit: s.o.DefaultRateLimit, Algorithm: s.o.Algorithm}
}

// writeSettings merges an update into the GPU type's ConfigMap entry,
// creating the ConfigMap if needed, retrying on conflicting writes.
func (s *Server) writeSettings(ctx context.Context, t string, up rest.SchedulerUpdate) error {
	// Marked before the write, so that no read after it can miss it.
	s.settingsWritten.Store(time.Now().UnixNano())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		key := types.NamespacedName{Namespace: s.o.ConfigNamespace, Name: kube.ConfigMapName}
		err := s.c.Get(ctx, key, cm)
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		// An entry that does not parse is replaced, not merged.
		cur, _ := kube.ParseSchedulerSettings(cm.Data[t])
		if up.Algorithm != "" {
			cur.Algorithm = up.Algorithm
		}
		if up.RateLimit != "" {
			cur.RateLimit = up.RateLimit
		}
		if up.PolicyParams != nil {
			cur.PolicyParams = settingsOf(up).PolicyParams
		}
		if _, _, err := cur.Resolve(s.defaults()); err != nil {
			cur = settingsOf(up)
		}
		val, err := yaml.Marshal(cur)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[t] = string(val)
		if create {
			cm.Namespace, cm.Name = key.Namespace, key.Name
			return s.c.Create(ctx, cm)
		}
		return s.c.Update(ctx, cm)
	})
	if err != nil {
		return kubeError(err, "ConfigMap", kube.ConfigMapName)
	}
	return nil
}
