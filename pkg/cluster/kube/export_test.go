package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/scheduler"
)

// Refused is how many refused jobs the controller remembers.
func (c *Controller) Refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.refused)
}

// WriteOutOfOrder computes two statuses of a job in turn, its own with the
// message first and then second, and writes the second before the first,
// as two writers that finished in the other order would.
func (c *Controller) WriteOutOfOrder(ctx context.Context, ns, name, gpuType, first, second string) error {
	e := c.engineFor(api.GPUType(gpuType))
	id := jobID(types.NamespacedName{Namespace: ns, Name: name})
	var earlier, later pending
	err := e.loop.Do(ctx, func(en *scheduler.Engine) error {
		j, ok := en.Job(id)
		if !ok {
			return fmt.Errorf("job %s is not known", id)
		}
		s := e.statusFor(j)
		s.Message = first
		earlier = e.pend(id, s, time.Now())
		s.Message = second
		later = e.pend(id, s, time.Now())
		return nil
	})
	if err != nil {
		return err
	}
	if err := e.send(ctx, later); err != nil {
		return err
	}
	return e.send(ctx, earlier)
}
