package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/compat"
)

// phases are the values of the status filter.
var phases = []v1alpha1.Phase{
	v1alpha1.PhaseSubmitted, v1alpha1.PhaseWaiting, v1alpha1.PhaseStarting, v1alpha1.PhaseRunning,
	v1alpha1.PhaseCompleted, v1alpha1.PhaseFailed, v1alpha1.PhaseCanceled,
}

// createJob is POST /api/v1/jobs.
func (s *Server) createJob(w http.ResponseWriter, r *http.Request, u User) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	tj, err := DecodeJob(body, r.Header.Get("Content-Type"), s.o.Now())
	if err != nil {
		return err
	}
	switch tj.Namespace {
	case "", s.o.Namespace:
		tj.Namespace = s.o.Namespace
	default:
		return errorf(http.StatusBadRequest, "metadata.namespace is %q: jobs submitted here go to %q; leave it out", tj.Namespace, s.o.Namespace)
	}
	if tj.Spec.Submitter != "" && tj.Spec.Submitter != u.Name && !s.admin(u) {
		return errorf(http.StatusForbidden, "spec.submitter is %q but you are %q: leave it out, or ask an admin to submit for another user", tj.Spec.Submitter, u.Name)
	}
	if tj.Spec.Submitter == "" {
		tj.Spec.Submitter = u.Name
	}
	accepted := tj.Spec.AcceptedGPUTypes()
	for i, t := range accepted {
		field := "spec.gpuType"
		if len(tj.Spec.GPUTypes) > 0 {
			field = fmt.Sprintf("spec.gpuTypes[%d]", i)
		}
		if err := s.knownGPUType(r, field, t); err != nil {
			return err
		}
		if a, b := s.o.Accelerators.Of(accepted[0]), s.o.Accelerators.Of(t); a != b {
			return errorf(http.StatusBadRequest, "spec.gpuTypes: %s schedules %s but %s schedules %s; a job's types must schedule one resource, which its template asks for", accepted[0], a, t, b)
		}
	}
	res := s.o.Accelerators.Of(accepted[0])
	if _, err := tj.Spec.WorkerAccelerators(res); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if err := errors.Join(tj.Spec.TemplateConflicts(res), tj.Spec.AcceleratorConflicts(res, s.o.Accelerators.Resources())); err != nil {
		return errorf(http.StatusBadRequest, "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if err := tj.Spec.Privileges(); err != nil && !s.admin(u) {
		return errorf(http.StatusForbidden, "%s: jobs submitted here run in namespace %s with rights you were not given there; remove these, or ask an admin to submit the job",
			strings.ReplaceAll(err.Error(), "\n", "; "), s.o.Namespace)
	}
	gpus, err := s.gpusByType(r.Context())
	if err != nil {
		return err
	}
	if err := s.checkQueue(r.Context(), tj, gpus); err != nil {
		return err
	}
	if err := s.create(r, tj, compat.IsMPIJob(body)); err != nil {
		return err
	}
	s.awaitCache(r.Context(), tj.Name, func(c *v1alpha1.TrainingJob, found bool) bool { return found && c.UID == tj.UID })
	typed(tj)
	w.Header().Set("Location", "/api/v1/jobs/"+tj.Name)
	writeJSON(w, http.StatusCreated, tj)
	return nil
}

// create creates the job. A job in the original format is named after its
// file and the second it was submitted; when that name is taken (the same
// file submitted twice within a second), it gets the first free suffix
// -2 … -9 instead of a conflict over a name the user never chose.
func (s *Server) create(r *http.Request, tj *v1alpha1.TrainingJob, generated bool) error {
	base := tj.Name
	err := s.c.Create(r.Context(), tj)
	for n := 2; generated && apierrors.IsAlreadyExists(err) && n <= 9; n++ {
		name := fmt.Sprintf("%s-%d", base, n)
		if len(validation.IsDNS1035Label(name)) > 0 {
			break
		}
		compat.Rename(tj, name)
		err = s.c.Create(r.Context(), tj)
	}
	switch {
	case err == nil:
		return nil
	case generated && apierrors.IsAlreadyExists(err):
		return errorf(http.StatusConflict, "job %s and the names after it are taken: an MPIJob file's job is named metadata.name plus the second it was submitted; submit again in a second, or change metadata.name", base)
	}
	return kubeError(err, "job", tj.Name)
}

// gpusByType counts the schedulable GPUs of every GPU type.
func (s *Server) gpusByType(ctx context.Context) (map[string]int, error) {
	var nodes corev1.NodeList
	if err := s.c.List(ctx, &nodes, client.HasLabels{v1alpha1.AcceleratorLabel}); err != nil {
		return nil, kubeError(err, "nodes", "")
	}
	out := map[string]int{}
	for i := range nodes.Items {
		t, n := kube.NodeGPUs(&nodes.Items[i], s.o.Accelerators)
		out[string(t)] += n
	}
	return out, nil
}

// knownGPUType checks that some node has the GPU type, so that a typo does
// not leave a job waiting forever.
func (s *Server) knownGPUType(r *http.Request, field, gpuType string) error {
	var nodes corev1.NodeList
	if err := s.c.List(r.Context(), &nodes, client.HasLabels{v1alpha1.AcceleratorLabel}); err != nil {
		return kubeError(err, "nodes", "")
	}
	known := map[string]bool{}
	for i := range nodes.Items {
		known[nodes.Items[i].Labels[v1alpha1.AcceleratorLabel]] = true
	}
	if known[gpuType] {
		return nil
	}
	if len(known) == 0 {
		return errorf(http.StatusBadRequest, "%s %q: no node has a GPU type yet; label the GPU nodes with %s=%s", field, gpuType, v1alpha1.AcceleratorLabel, gpuType)
	}
	return errorf(http.StatusBadRequest, "%s %q: no node has this GPU type; the cluster has %s", field, gpuType, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
}

// listJobs is GET /api/v1/jobs?status=&gpuType=&user=&limit=&continue=:
// one page of the jobs that pass the filters (listpage.go).
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, u User) error {
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains([]string{"status", "gpuType", "user", "limit", "continue"}, k) {
			return errorf(http.StatusBadRequest, "unknown query parameter %q: the filters are status, gpuType and user; limit and continue page the list", k)
		}
	}
	status, gpuType, user := q.Get("status"), q.Get("gpuType"), q.Get("user")
	if status != "" {
		i := slices.IndexFunc(phases, func(p v1alpha1.Phase) bool { return strings.EqualFold(string(p), status) })
		if i < 0 {
			return errorf(http.StatusBadRequest, "status %q: want one of %s", status, joinPhases())
		}
		status = string(phases[i])
	}
	if !s.admin(u) {
		if user != "" && user != u.Name {
			return errorf(http.StatusForbidden, "you (%s) may list only your own jobs", u.Name)
		}
		user = u.Name
	}
	limit, from, err := pageParams(q.Get("limit"), q.Get("continue"))
	if err != nil {
		return err
	}
	match := func(tj *v1alpha1.TrainingJob) bool {
		return (status == "" || string(phaseOf(tj)) == status) &&
			(gpuType == "" || tj.CurrentGPUType() == gpuType || slices.Contains(tj.Spec.AcceptedGPUTypes(), gpuType)) &&
			(user == "" || tj.Spec.Submitter == user)
	}
	page := s.jobPage
	if s.o.Cache != nil {
		page = s.cachedJobPage
	}
	out, err := page(r.Context(), limit, from, match)
	if err != nil {
		return err
	}
	for i := range out.Items {
		typed(&out.Items[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// typed sets the kind of a job read through the typed client, which leaves
// it out, so that API clients get complete objects.
func typed(tj *v1alpha1.TrainingJob) {
	tj.APIVersion, tj.Kind = v1alpha1.GroupVersion.String(), "TrainingJob"
	tj.ManagedFields = nil
}

// phaseOf is a job's phase; a job no controller has seen yet is Submitted.
func phaseOf(tj *v1alpha1.TrainingJob) v1alpha1.Phase {
	if tj.Status.Phase == "" {
		return v1alpha1.PhaseSubmitted
	}
	return tj.Status.Phase
}

func joinPhases() string {
	s := make([]string, len(phases))
	for i, p := range phases {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// job reads the job named in the path from the API server, if u may see
// it.
func (s *Server) job(r *http.Request, u User) (*v1alpha1.TrainingJob, error) {
	return s.jobFrom(r, u, false)
}

// jobFrom is job, read from the cache if cached is set and the server has
// one (a job it does not hold yet, from the API server).
func (s *Server) jobFrom(r *http.Request, u User, cached bool) (*v1alpha1.TrainingJob, error) {
	name := r.PathValue("name")
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return nil, errorf(http.StatusBadRequest, "%q is not a job name: %s", name, strings.Join(msgs, "; "))
	}
	key := types.NamespacedName{Namespace: s.o.Namespace, Name: name}
	tj := &v1alpha1.TrainingJob{}
	if !cached || s.o.Cache == nil || s.o.Cache.Get(r.Context(), key, tj) != nil {
		if err := s.c.Get(r.Context(), key, tj); err != nil {
			return nil, kubeError(err, "job", name)
		}
	}
	if tj.Spec.Submitter != u.Name && !s.admin(u) {
		return nil, errorf(http.StatusForbidden, "job %s belongs to another user: you (%s) may see and delete only your own jobs", name, u.Name)
	}
	typed(tj)
	return tj, nil
}

// getJob is GET /api/v1/jobs/{name}.
func (s *Server) getJob(w http.ResponseWriter, r *http.Request, u User) error {
	tj, err := s.job(r, u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tj)
	return nil
}

// deleteJob is DELETE /api/v1/jobs/{name}. The job's MPIJob and pods go
// with it: they are owned by the TrainingJob.
func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request, u User) error {
	tj, err := s.job(r, u)
	if err != nil {
		return err
	}
	err = s.c.Delete(r.Context(), tj, client.Preconditions{UID: &tj.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil {
		return kubeError(err, "job", tj.Name)
	}
	s.awaitCache(r.Context(), tj.Name, func(c *v1alpha1.TrainingJob, found bool) bool {
		return !found || c.UID != tj.UID || c.DeletionTimestamp != nil
	})
	writeJSON(w, http.StatusOK, rest.Deleted{Name: tj.Name})
	return nil
}

// jobEvents is GET /api/v1/jobs/{name}/events.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request, u User) error {
	tj, err := s.job(r, u)
	if err != nil {
		return err
	}
	events, err := s.eventsOf(r.Context(), tj)
	if err != nil {
		return err
	}
	out := rest.EventList{Items: make([]rest.Event, 0, len(events))}
	for i := range events {
		out.Items = append(out.Items, restEvent(&events[i]))
	}
	slices.SortStableFunc(out.Items, func(a, b rest.Event) int { return a.LastTime.Compare(b.LastTime) })
	writeJSON(w, http.StatusOK, out)
	return nil
}

// eventsOf lists a job's Events: from Options.Events if set, else from the
// API server.
func (s *Server) eventsOf(ctx context.Context, tj *v1alpha1.TrainingJob) ([]corev1.Event, error) {
	var l corev1.EventList
	if s.o.Events != nil {
		if err := s.o.Events.List(ctx, &l, client.InNamespace(tj.Namespace), client.MatchingFields{kube.JobEventsField: tj.Name}); err != nil {
			return nil, kubeError(err, "events", tj.Name)
		}
		// An earlier job of the same name had Events of its own.
		return slices.DeleteFunc(l.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind != "TrainingJob" || e.InvolvedObject.UID != tj.UID
		}), nil
	}
	sel := fields.Set{"involvedObject.kind": "TrainingJob", "involvedObject.name": tj.Name, "involvedObject.uid": string(tj.UID)}
	if err := s.c.List(ctx, &l, client.InNamespace(tj.Namespace), client.MatchingFieldsSelector{Selector: sel.AsSelector()}); err != nil {
		return nil, kubeError(err, "events", tj.Name)
	}
	return l.Items, nil
}

// restEvent is an Event as the API gives it.
func restEvent(e *corev1.Event) rest.Event {
	first, last := e.FirstTimestamp.Time, e.LastTimestamp.Time
	if last.IsZero() {
		last = e.EventTime.Time
	}
	if first.IsZero() {
		first = last
	}
	count := e.Count
	if count == 0 {
		count = 1
	}
	return rest.Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: count, FirstTime: first, LastTime: last}
}

// kubeError turns an error of the Kubernetes API into the answer to the
// caller: the API server's judgement of a request stays a 4xx, anything
// else is the server's failure.
func kubeError(err error, what, name string) error {
	subject := what
	if name != "" {
		subject = what + " " + name
	}
	switch {
	case apierrors.IsNotFound(err):
		return errorf(http.StatusNotFound, "%s not found", subject)
	case apierrors.IsAlreadyExists(err):
		return errorf(http.StatusConflict, "%s already exists: choose another metadata.name", subject)
	case apierrors.IsConflict(err):
		return errorf(http.StatusConflict, "%s changed meanwhile: try again", subject)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return errorf(http.StatusUnprocessableEntity, "the Kubernetes API server rejected %s: %v", subject, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the server's service account may not do this (check its RBAC role): %w", err)
	}
	return fmt.Errorf("%s: %w", subject, err)
}
