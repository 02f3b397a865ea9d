package kube

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
	"github.com/vodascheduler/voda/pkg/progress"
)

// DefaultMetricsScan is how often the metrics directory is read.
const DefaultMetricsScan = 30 * time.Second

// metricsDir reads the original Voda's per-job CSV files
// (<dir>/<job>.csv, one row per epoch, written by its Keras callback) and
// writes what they say into each job's status.progress, where the
// estimator picks it up as it does reports to the REST API. A job with a
// file is summed up from the file alone. Leader only.
type metricsDir struct {
	c    *Controller
	dir  string
	seen map[api.JobID]time.Time // the file's modification time last read
}

// NeedLeaderElection makes the reader run on the leader only.
func (m *metricsDir) NeedLeaderElection() bool { return true }

// Start scans every period until ctx ends.
func (m *metricsDir) Start(ctx context.Context) error {
	if !m.c.waitReady(ctx) {
		return nil
	}
	t := time.NewTicker(m.c.opts.MetricsScan)
	defer t.Stop()
	for {
		m.scan(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (m *metricsDir) scan(ctx context.Context) {
	var jobs v1alpha1.TrainingJobList
	if err := m.c.client.List(ctx, &jobs); err != nil {
		m.c.log.Error(err, "metrics directory: list jobs")
		return
	}
	for i := range jobs.Items {
		tj := &jobs.Items[i]
		if tj.Status.Phase.Final() || !m.c.handles(api.GPUType(tj.CurrentGPUType())) {
			continue
		}
		id := jobID(client.ObjectKeyFromObject(tj))
		path := filepath.Join(m.dir, tj.Name+".csv")
		st, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || st.ModTime().Equal(m.seen[id]) {
			continue
		}
		m.seen[id] = st.ModTime()
		if err := m.read(ctx, tj, path); err != nil {
			m.c.log.Error(err, "metrics file", "job", id, "path", path)
			m.c.event(id, corev1.EventTypeWarning, "BadMetricsFile", err.Error())
		}
	}
}

// read sums a job's file up and writes it into the status if it says more.
func (m *metricsDir) read(ctx context.Context, tj *v1alpha1.TrainingJob, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	reports, err := progress.ParseCSV(f)
	if err != nil {
		return err
	}
	if len(reports) == 0 {
		return nil
	}
	p := progress.Summarise(reports, time.Now())
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &v1alpha1.TrainingJob{}
		if err := m.c.reader.Get(ctx, client.ObjectKeyFromObject(tj), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if old := cur.Status.Progress; old != nil && old.Epoch == p.Epoch && old.Reports == p.Reports && reflect.DeepEqual(old.EpochTimes, p.EpochTimes) {
			return nil
		}
		cur.Status.Progress = p
		return m.c.client.Status().Update(ctx, cur)
	})
}
