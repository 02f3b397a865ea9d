package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// The job list comes in pages: at 5 000 jobs the whole list is megabytes
// that nobody reads at once. A page holds at most limit jobs that pass the
// filters, in name order.
//
// The controller's API (Options.Cache set) reads them from the
// controller's cache, as the dashboard does: reading thousands of jobs
// from the API server took seconds while it was busy starting thousands
// of others (docs/scale.md). A page continues after the last name of the
// page before, so a job created or deleted meanwhile never shifts or
// repeats an entry. A job created or deleted through this API is waited
// for (awaitCache) until the cache shows it, so the list read next has it.
//
// Without a cache the pages are read from the API server in pages of its
// own (a consistent snapshot: the API server's continue tokens carry the
// resource version of the first page). The filters are Voda's, not the
// API server's, so a page of Voda's may end inside one of the API
// server's; its token then says where.

const (
	// DefaultListLimit is a page's size when the request names none.
	DefaultListLimit = 500
	// MaxListLimit is the largest page a request may ask for.
	MaxListLimit = 1000
)

// listToken is what a continue parameter carries. Read from the API
// server: the API server page to read (its continue token, empty for the
// first), its size, and how many of its jobs earlier pages already went
// through. Read from the cache: the last name of the page before (After).
type listToken struct {
	From  string `json:"f,omitempty"`
	Size  int64  `json:"n"`
	Skip  int    `json:"s,omitempty"`
	After string `json:"a,omitempty"`
}

// cached reports whether the token continues a list read from the cache.
func (t listToken) cached() bool { return t.After != "" }

func (t listToken) encode() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

// pageParams reads a list's limit and continue parameters.
func pageParams(limit, cont string) (int, listToken, error) {
	n := DefaultListLimit
	if limit != "" {
		v, err := strconv.Atoi(limit)
		if err != nil || v < 1 || v > MaxListLimit {
			return 0, listToken{}, errorf(http.StatusBadRequest, "limit %q: want a number of jobs from 1 to %d (default %d); follow continue for more", limit, MaxListLimit, DefaultListLimit)
		}
		n = v
	}
	t := listToken{Size: int64(n)}
	if cont == "" {
		return n, t, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cont)
	if err == nil {
		t = listToken{}
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Size < 1 || t.Size > MaxListLimit || t.Skip < 0 || int64(t.Skip) >= t.Size || t.cached() && (t.From != "" || t.Skip != 0) {
		return 0, listToken{}, errorf(http.StatusBadRequest, "continue %q is not a token this API gave out: list again without it", cont)
	}
	return n, t, nil
}

// badToken is the error for a token of the other kind of list (one read
// from the API server given to a replica that reads its cache, or the
// other way round).
func badToken() error {
	return errorf(http.StatusBadRequest, "the continue token is not one this API gives out: list again without it")
}

// cachedJobPage reads, after the job named from.After (from the start if
// empty), up to limit jobs of the API's namespace that match, from the
// controller's cache.
func (s *Server) cachedJobPage(ctx context.Context, limit int, from listToken, match func(*v1alpha1.TrainingJob) bool) (rest.JobList, error) {
	out := rest.JobList{Items: []v1alpha1.TrainingJob{}}
	if from.From != "" || from.Skip != 0 {
		return out, badToken()
	}
	// The cache's own objects, not copies: the items are copied below
	// (struct copies; nothing here writes into what they share).
	var l v1alpha1.TrainingJobList
	if err := s.o.Cache.List(ctx, &l, client.InNamespace(s.o.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return out, kubeError(err, "jobs", "")
	}
	var page []*v1alpha1.TrainingJob
	for i := range l.Items {
		if tj := &l.Items[i]; tj.Name > from.After && match(tj) {
			page = append(page, tj)
		}
	}
	slices.SortFunc(page, func(a, b *v1alpha1.TrainingJob) int { return strings.Compare(a.Name, b.Name) })
	for _, tj := range page[:min(limit, len(page))] {
		out.Items = append(out.Items, *tj)
	}
	if len(page) > limit {
		out.Continue = listToken{Size: int64(limit), After: out.Items[limit-1].Name}.encode()
	}
	return out, nil
}

// cacheWait is the longest a job's creation or deletion through the API
// waits for the controller's cache to show it.
const cacheWait = 5 * time.Second

// awaitCache waits, at most cacheWait, until the controller's cache shows
// what a write to the job called name did: until seen says so of the
// cache's copy (found false: the cache has none). Without a cache it
// returns at once. It never fails the request: the write is done, and the
// cache shows it a moment later.
func (s *Server) awaitCache(ctx context.Context, name string, seen func(tj *v1alpha1.TrainingJob, found bool) bool) {
	if s.o.Cache == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	for delay := 2 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		var tj v1alpha1.TrainingJob
		err := s.o.Cache.Get(ctx, types.NamespacedName{Namespace: s.o.Namespace, Name: name}, &tj)
		if err != nil && !apierrors.IsNotFound(err) || seen(&tj, err == nil) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// jobPage reads, from the page at from on, up to limit jobs of the API's
// namespace that match.
func (s *Server) jobPage(ctx context.Context, limit int, from listToken, match func(*v1alpha1.TrainingJob) bool) (rest.JobList, error) {
	out := rest.JobList{Items: []v1alpha1.TrainingJob{}}
	if from.cached() {
		return out, badToken()
	}
	for t := from; ; {
		var l v1alpha1.TrainingJobList
		err := s.c.List(ctx, &l, client.InNamespace(s.o.Namespace), client.Limit(t.Size), client.Continue(t.From))
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return out, errorf(http.StatusGone, "the continue token expired (the API server keeps a list's snapshot for a few minutes): list again without it")
		}
		if err != nil {
			return out, kubeError(err, "jobs", "")
		}
		for i := t.Skip; i < len(l.Items); i++ {
			if !match(&l.Items[i]) {
				continue
			}
			out.Items = append(out.Items, l.Items[i])
			if len(out.Items) < limit {
				continue
			}
			switch {
			case i+1 < len(l.Items):
				out.Continue = listToken{From: t.From, Size: t.Size, Skip: i + 1}.encode()
			case l.Continue != "":
				out.Continue = listToken{From: l.Continue, Size: t.Size}.encode()
			}
			return out, nil
		}
		if l.Continue == "" {
			return out, nil
		}
		t = listToken{From: l.Continue, Size: t.Size}
	}
}
