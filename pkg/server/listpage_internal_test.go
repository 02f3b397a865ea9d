package server

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// lagging is a cache that has the job only from its show-th read on (never
// if show is 0), or fails every read with err.
type lagging struct {
	client.Reader
	show, reads int
	err         error
}

func (l *lagging) Get(_ context.Context, key types.NamespacedName, obj client.Object, _ ...client.GetOption) error {
	l.reads++
	switch {
	case l.err != nil:
		return l.err
	case l.show == 0 || l.reads < l.show:
		return apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "trainingjobs"}, key.Name)
	}
	obj.(*v1alpha1.TrainingJob).Name = key.Name
	return nil
}

// A write through the API waits until the cache shows it, and no longer
// than the request lasts; a cache that fails, or none, is not waited for.
func TestAwaitCache(t *testing.T) {
	found := func(_ *v1alpha1.TrainingJob, ok bool) bool { return ok }
	for _, c := range []struct {
		name      string
		cache     *lagging
		timeout   time.Duration
		wantReads int
	}{
		{"shows at the sixth read", &lagging{show: 6}, time.Minute, 6},
		{"shows at once", &lagging{show: 1}, time.Minute, 1},
		{"fails", &lagging{err: errors.New("cache stopped")}, time.Minute, 1},
	} {
		s := &Server{o: Options{Namespace: "ns", Cache: c.cache}}
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		s.awaitCache(ctx, "j", found)
		cancel()
		if c.cache.reads != c.wantReads {
			t.Errorf("%s: %d reads of the cache, want %d", c.name, c.cache.reads, c.wantReads)
		}
	}
	// Never shows: the wait ends with the request.
	never := &lagging{}
	s := &Server{o: Options{Namespace: "ns", Cache: never}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s.awaitCache(ctx, "j", found)
	if ctx.Err() == nil || never.reads < 2 {
		t.Errorf("the wait for a job the cache never shows ended after %d reads, before the request's deadline (%v)", never.reads, ctx.Err())
	}
	// No cache: nothing to wait for.
	(&Server{}).awaitCache(context.Background(), "j", func(*v1alpha1.TrainingJob, bool) bool {
		t.Error("without a cache, awaitCache looked for the job")
		return true
	})
}
