package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// queueRead is the queue objects the API sees: every ClusterQueue and the
// LocalQueues of its namespace.
type queueRead struct {
	cqs map[string]*v1alpha1.ClusterQueue
	lqs []v1alpha1.LocalQueue
}

// readQueues lists the queue objects; a cluster without the queue CRDs has
// none.
func (s *Server) readQueues(ctx context.Context) (*queueRead, error) {
	out := &queueRead{cqs: map[string]*v1alpha1.ClusterQueue{}}
	// From the controller's cache when it has one (it watches both kinds):
	// the API server is busiest when many jobs start, when a team most
	// wants to see its share.
	r := client.Reader(s.c)
	if s.o.Cache != nil {
		r = s.o.Cache
	}
	var cqs v1alpha1.ClusterQueueList
	if err := r.List(ctx, &cqs); err != nil {
		if meta.IsNoMatchError(err) {
			return out, nil
		}
		return nil, kubeError(err, "cluster queues", "")
	}
	for i := range cqs.Items {
		out.cqs[cqs.Items[i].Name] = &cqs.Items[i]
	}
	var lqs v1alpha1.LocalQueueList
	if err := r.List(ctx, &lqs, client.InNamespace(s.o.Namespace)); err != nil {
		return nil, kubeError(err, "local queues", "")
	}
	out.lqs = lqs.Items
	slices.SortFunc(out.lqs, func(a, b v1alpha1.LocalQueue) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// names lists the LocalQueues jobs submitted here may name.
func (q *queueRead) names() string {
	var out []string
	for _, lq := range q.lqs {
		out = append(out, lq.Name)
	}
	if len(out) == 0 {
		return "none: ask an admin to create a LocalQueue in this namespace"
	}
	return strings.Join(out, ", ")
}

// listQueues is GET /api/v1/queues: the LocalQueues of the API's
// namespace, each with its ClusterQueue's use.
func (s *Server) listQueues(w http.ResponseWriter, r *http.Request, _ User) error {
	qr, err := s.readQueues(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, qr.list())
	return nil
}

func (q *queueRead) list() rest.QueueList {
	out := rest.QueueList{Items: []rest.Queue{}}
	for _, lq := range q.lqs {
		item := rest.Queue{Name: lq.Name, Default: lq.Name == v1alpha1.DefaultLocalQueue, ClusterQueue: lq.Spec.ClusterQueue,
			RunningJobs: int(lq.Status.RunningJobs), WaitingJobs: int(lq.Status.WaitingJobs), Message: lq.Status.Message}
		if cq, ok := q.cqs[lq.Spec.ClusterQueue]; ok {
			st := cq.Status
			item.Cohort = cq.Spec.Cohort
			item.Nominal, item.Used, item.Borrowed, item.Lent, item.Pending = int(st.Nominal), int(st.Used), int(st.Borrowed), int(st.Lent), int(st.Pending)
			item.GPUTypes = st.GPUTypes
		} else if item.Message == "" {
			item.Message = fmt.Sprintf("ClusterQueue %s does not exist: the jobs of this queue wait", lq.Spec.ClusterQueue)
		}
		out.Items = append(out.Items, item)
	}
	return out
}

// checkQueue refuses a job that could never run for its queue: it names a
// LocalQueue that does not exist here, or none while the cluster has
// queues and no default, or one whose ClusterQueue is missing or does not
// admit the namespace, or its minimum exceeds what its queue may ever hold
// on every GPU type it accepts.
func (s *Server) checkQueue(ctx context.Context, tj *v1alpha1.TrainingJob, gpus map[string]int) error {
	qr, err := s.readQueues(ctx)
	if err != nil {
		return err
	}
	name := tj.Spec.QueueName
	if name == "" && len(qr.cqs) == 0 {
		return nil
	}
	if name == "" {
		name = v1alpha1.DefaultLocalQueue
	}
	i := slices.IndexFunc(qr.lqs, func(lq v1alpha1.LocalQueue) bool { return lq.Name == name })
	switch {
	case i < 0 && tj.Spec.QueueName == "":
		return errorf(http.StatusBadRequest, "spec.queueName: the cluster shares its GPUs through queues and namespace %s has no default queue: name one of %s (GET /api/v1/queues)", s.o.Namespace, qr.names())
	case i < 0:
		return errorf(http.StatusBadRequest, "spec.queueName: there is no queue %q in namespace %s: name one of %s (GET /api/v1/queues)", name, s.o.Namespace, qr.names())
	}
	cq, ok := qr.cqs[qr.lqs[i].Spec.ClusterQueue]
	if !ok {
		return errorf(http.StatusBadRequest, "spec.queueName: queue %s leads to ClusterQueue %s, which does not exist: ask an admin to create it, or name another queue", name, qr.lqs[i].Spec.ClusterQueue)
	}
	if err := cq.Validate(); err != nil {
		return errorf(http.StatusBadRequest, "spec.queueName: queue %s leads to an invalid %v", name, err)
	}
	if sel := cq.Spec.NamespaceSelector; sel != nil {
		ls, err := metav1.LabelSelectorAsSelector(sel)
		var ns corev1.Namespace
		if err == nil {
			err = s.c.Get(ctx, types.NamespacedName{Name: s.o.Namespace}, &ns)
		}
		if err != nil {
			return kubeError(err, "namespace", s.o.Namespace)
		}
		if !ls.Matches(labels.Set(ns.Labels)) {
			return errorf(http.StatusForbidden, "spec.queueName: ClusterQueue %s does not admit namespace %s (its namespaceSelector): name another queue", cq.Name, s.o.Namespace)
		}
	}
	k, _ := tj.Spec.WorkerAccelerators(s.o.Accelerators.Of(tj.Spec.AcceptedGPUTypes()[0]))
	need := int(tj.Spec.MinWorkers) * max(k, 1)
	var most []string
	for _, t := range tj.Spec.AcceptedGPUTypes() {
		reach := cq.Reach(qr.cqs, t, gpus[t])
		if need <= reach {
			return nil
		}
		most = append(most, fmt.Sprintf("%d on %s", reach, t))
	}
	return errorf(http.StatusUnprocessableEntity, "spec.minWorkers: the job needs at least %d GPUs but ClusterQueue %s may never hold more than %s (its nominal quota and what it may borrow): lower minWorkers, or ask an admin to raise the queue's quota or borrowing limit",
		need, cq.Name, strings.Join(most, ", "))
}
