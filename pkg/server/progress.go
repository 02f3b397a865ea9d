package server

import (
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/progress"
)

// progressKey is the key of the job tokens, read once it is needed.
func (s *Server) progressKey(r *http.Request) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key == nil {
		key, err := progress.Key(r.Context(), s.c, s.c, s.o.ConfigNamespace)
		if err != nil {
			return nil, errorf(http.StatusServiceUnavailable, "cannot check job tokens now: %v", err)
		}
		s.key = key
	}
	return s.key, nil
}

// postProgress is POST /api/v1/jobs/{name}/progress: a running job reports
// an epoch, authenticated by its own token (VODA_PROGRESS_TOKEN in its pods).
func (s *Server) postProgress(w http.ResponseWriter, r *http.Request, _ User) error {
	name := r.PathValue("name")
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return errorf(http.StatusBadRequest, "%q is not a job name: %s", name, strings.Join(msgs, "; "))
	}
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return errorf(http.StatusUnauthorized, "no bearer token: send the job's token ($%s) as 'Authorization: Bearer TOKEN'", progress.EnvToken)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return errorf(http.StatusUnsupportedMediaType, "Content-Type %q is not accepted: send application/json", ct)
	}
	var rep progress.Report
	if err := decodeJSONBody(r, &rep, `a progress report {"epoch", "epochSeconds", "workers", ...}`); err != nil {
		return err
	}
	if err := rep.Validate(); err != nil {
		return errorf(http.StatusBadRequest, "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	key, err := s.progressKey(r)
	if err != nil {
		return err
	}
	// The job's namespace, as the controller writes it into the URL; the
	// API's own when left out. The token binds the job's namespace, name
	// and UID, so naming another namespace opens no other job.
	ns := s.o.Namespace
	for k, v := range r.URL.Query() {
		switch {
		case k != "namespace":
			return errorf(http.StatusBadRequest, "unknown query parameter %q: the only one is namespace", k)
		case len(v) != 1 || len(validation.IsDNS1123Label(v[0])) > 0:
			return errorf(http.StatusBadRequest, "namespace %q is not a namespace name", strings.Join(v, ","))
		}
		ns = v[0]
	}
	var out v1alpha1.TrainingProgress
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tj := &v1alpha1.TrainingJob{}
		err := s.c.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: name}, tj)
		// A missing job and a wrong token get the same answer, so that a
		// token does not tell which jobs exist.
		if apierrors.IsNotFound(err) {
			return errorf(http.StatusUnauthorized, "the token is not job %s's", name)
		}
		if err != nil {
			return err
		}
		if !progress.Valid(key, tj, tok) {
			return errorf(http.StatusUnauthorized, "the token is not job %s's", name)
		}
		if tj.Status.Phase.Final() {
			return errorf(http.StatusConflict, "job %s has ended (%s)", name, tj.Status.Phase)
		}
		if tj.Status.Progress == nil {
			tj.Status.Progress = &v1alpha1.TrainingProgress{}
		}
		progress.Add(tj.Status.Progress, rep, tj.CurrentGPUType(), tj.Status.Placement, s.o.Now())
		if err := s.c.Status().Update(r.Context(), tj); err != nil {
			return err
		}
		out = *tj.Status.Progress
		return nil
	})
	var he *httpError
	if errors.As(err, &he) {
		return err
	}
	if err != nil {
		return kubeError(err, "job", name)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
