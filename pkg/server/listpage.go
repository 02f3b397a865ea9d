package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/rest"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// The job list comes in pages: at 5 000 jobs the whole list is megabytes
// that nobody reads at once. A page holds at most limit jobs that pass the
// filters, in name order, read from the API server in pages of its own
// (a consistent snapshot: the API server's continue tokens carry the
// resource version of the first page). The filters are Voda's, not the API
// server's, so a page of Voda's may end inside one of the API server's;
// its token then says where.

const (
	// DefaultListLimit is a page's size when the request names none.
	DefaultListLimit = 500
	// MaxListLimit is the largest page a request may ask for.
	MaxListLimit = 1000
)

// listToken is what a continue parameter carries: the API server page to
// read (its continue token, empty for the first), its size, and how many
// of its jobs earlier pages already went through.
type listToken struct {
	From string `json:"f,omitempty"`
	Size int64  `json:"n"`
	Skip int    `json:"s,omitempty"`
}

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
	if err != nil || t.Size < 1 || t.Size > MaxListLimit || t.Skip < 0 || int64(t.Skip) >= t.Size {
		return 0, listToken{}, errorf(http.StatusBadRequest, "continue %q is not a token this API gave out: list again without it", cont)
	}
	return n, t, nil
}

// jobPage reads, from the page at from on, up to limit jobs of the API's
// namespace that match.
func (s *Server) jobPage(ctx context.Context, limit int, from listToken, match func(*v1alpha1.TrainingJob) bool) (rest.JobList, error) {
	out := rest.JobList{Items: []v1alpha1.TrainingJob{}}
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
