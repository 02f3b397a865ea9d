// Package progress is how running jobs report their training progress to
// Voda: the report's body, its validation, how it is summed up in the
// TrainingJob status, and the per-job token that authenticates it.
//
// Every job gets its own token, an HMAC of the job's identity under a key
// kept in the Secret voda-progress-key: the controller puts it in the job's
// pods (VODA_PROGRESS_TOKEN, with VODA_PROGRESS_URL), the REST API checks
// it. A token is good for reporting one job's progress and nothing else.
//
// Import rule: pkg/apis, client-go types and controller-runtime's client.
package progress

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vodascheduler/voda/pkg/api"
	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// The environment variables the controller sets in a job's pods.
const (
	EnvURL   = "VODA_PROGRESS_URL"
	EnvToken = "VODA_PROGRESS_TOKEN"
	// EnvGPUsPerWorker holds the job's GPUs per worker, in every pod Voda
	// starts: a script that knows its ranks (processes) reports
	// ranks / EnvGPUsPerWorker workers.
	EnvGPUsPerWorker = "VODA_GPUS_PER_WORKER"
)

// KeySecret is the Secret (in the controller's settings namespace) that
// holds the key of the job tokens, under KeyField.
const (
	KeySecret = "voda-progress-key"
	KeyField  = "key"
)

// Token is the progress token of a job.
func Token(key []byte, namespace, name string, uid types.UID) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s/%s/%s", namespace, name, uid)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Valid reports whether token is the job's, in constant time.
func Valid(key []byte, tj *v1alpha1.TrainingJob, token string) bool {
	want := Token(key, tj.Namespace, tj.Name, tj.UID)
	return hmac.Equal([]byte(want), []byte(token))
}

// Key reads the token key, creating the Secret with a random key if it does
// not exist yet (whichever replica comes first; the others read it).
// r should read from the API server, not a cache (a cache would watch every
// Secret).
func Key(ctx context.Context, r client.Reader, c client.Writer, namespace string) ([]byte, error) {
	var s corev1.Secret
	key := types.NamespacedName{Namespace: namespace, Name: KeySecret}
	err := r.Get(ctx, key, &s)
	if apierrors.IsNotFound(err) {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: KeySecret},
			Data: map[string][]byte{KeyField: b}}
		err = c.Create(ctx, &s)
		if apierrors.IsAlreadyExists(err) {
			err = r.Get(ctx, key, &s)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("progress key (Secret %s/%s): %w", namespace, KeySecret, err)
	}
	if len(s.Data[KeyField]) < 16 {
		return nil, fmt.Errorf("Secret %s/%s has no key of at least 16 bytes under %q", namespace, KeySecret, KeyField)
	}
	return s.Data[KeyField], nil
}

// Report is the body of POST /api/v1/jobs/{name}/progress: one epoch's
// numbers, as a training script knows them when the epoch ends.
type Report struct {
	// Epoch is the number of epochs done (1 after the first).
	Epoch int32 `json:"epoch"`
	// EpochSeconds is how long the epoch took; or give StepSeconds and
	// Steps (steps per epoch).
	EpochSeconds float64 `json:"epochSeconds,omitempty"`
	StepSeconds  float64 `json:"stepSeconds,omitempty"`
	Steps        int64   `json:"steps,omitempty"`
	// Workers is the number of workers the epoch ran on.
	Workers int32 `json:"workers"`
	// LocalBatch and GlobalBatch are the per-worker and total batch sizes
	// (informational).
	LocalBatch  int64 `json:"localBatch,omitempty"`
	GlobalBatch int64 `json:"globalBatch,omitempty"`
	// GradSqr and GradVar are the epoch's gradient statistics, which a
	// job that lets Voda choose its batch size reports (both or neither):
	// GradSqr estimates |G|², the squared norm of the true gradient, and
	// GradVar tr(Σ), the summed variance of one sample's gradient, so that
	// a batch of M samples has a gradient of expected squared norm GradSqr
	// + GradVar/M. GradVar/GradSqr is the gradient noise scale, in samples.
	// examples/progress/voda_progress.py computes both.
	GradSqr *float64 `json:"gradSqr,omitempty"`
	GradVar *float64 `json:"gradVar,omitempty"`
	// EquivalentEpochs is, for a job that lets Voda choose its batch size,
	// the epochs at its initial batch size its training is worth so far
	// (each epoch counted by its statistical efficiency).
	EquivalentEpochs *float64 `json:"equivalentEpochs,omitempty"`
	// Timestamp is when the epoch ended (informational; the server's clock
	// counts).
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// maxNoiseScale bounds a noise scale (samples) so that it fits a Quantity
// in thousandths: a gradient that small is all noise at any batch size.
const maxNoiseScale = 1e12

// Seconds is the epoch's time, from EpochSeconds or StepSeconds × Steps.
func (r Report) Seconds() float64 {
	if r.EpochSeconds > 0 {
		return r.EpochSeconds
	}
	return r.StepSeconds * float64(r.Steps)
}

// Validate checks a report; every problem is named.
func (r Report) Validate() error {
	var errs []error
	if r.Epoch < 1 || r.Epoch > 1_000_000 {
		errs = append(errs, fmt.Errorf("epoch is %d: want the number of epochs done, 1 or more", r.Epoch))
	}
	if r.Workers < 1 || r.Workers > 100_000 {
		errs = append(errs, fmt.Errorf("workers is %d: want the workers the epoch ran on, 1 or more", r.Workers))
	}
	for name, v := range map[string]float64{"epochSeconds": r.EpochSeconds, "stepSeconds": r.StepSeconds} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 1e7 {
			errs = append(errs, fmt.Errorf("%s is %v: want a duration in seconds", name, v))
		}
	}
	if r.Steps < 0 {
		errs = append(errs, fmt.Errorf("steps is %d: want steps per epoch", r.Steps))
	}
	if r.LocalBatch < 0 || r.GlobalBatch < 0 || r.GlobalBatch > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("localBatch %d, globalBatch %d: want batch sizes in samples, 0 or more (globalBatch at most %d)", r.LocalBatch, r.GlobalBatch, math.MaxInt32))
	}
	switch sq, vr := r.GradSqr, r.GradVar; {
	case (sq == nil) != (vr == nil):
		errs = append(errs, errors.New("gradSqr and gradVar go together: give both or neither"))
	case sq == nil:
	case math.IsNaN(*sq) || math.IsInf(*sq, 0) || *sq <= 0:
		errs = append(errs, fmt.Errorf("gradSqr is %v: want the squared gradient norm's estimate, above 0 (when the estimate comes out 0 or below, leave both statistics out of this report)", *sq))
	case math.IsNaN(*vr) || math.IsInf(*vr, 0) || *vr < 0:
		errs = append(errs, fmt.Errorf("gradVar is %v: want the per-sample gradient variance's estimate, 0 or more (a negative estimate means too few steps: leave both statistics out of this report)", *vr))
	}
	if e := r.EquivalentEpochs; e != nil && (math.IsNaN(*e) || *e < 0 || *e > 1_000_000) {
		errs = append(errs, fmt.Errorf("equivalentEpochs is %v: want the epochs at the initial batch size done so far, 0 or more", *e))
	}
	if s := r.Seconds(); len(errs) == 0 && !(s > 0 && s <= 1e7) {
		errs = append(errs, errors.New("no epoch time: give epochSeconds, or stepSeconds and steps"))
	}
	return errors.Join(errs...)
}

// Add folds a valid report into a job's progress, received at now while
// the job ran on gpuType with its workers at placement (status.placement,
// one node per worker): epoch times are averaged per worker count, GPU
// type, batch and nodes spanned. The nodes are those of placement when it
// holds as many workers as the report, else not known (0): a report can
// arrive after a resize it did not see.
func Add(p *v1alpha1.TrainingProgress, r Report, gpuType string, placement []string, now time.Time) {
	p.Epoch = max(p.Epoch, r.Epoch)
	p.Reports++
	t := metav1.NewTime(now)
	p.LastReportTime = &t
	ms := int64(math.Round(r.Seconds() * 1000))
	ms = max(ms, 1)
	if r.GradSqr != nil && r.GradVar != nil {
		b := min(*r.GradVar / *r.GradSqr, maxNoiseScale)
		if old := p.NoiseScale; old != nil {
			b = (b + old.AsApproximateFloat64()) / 2
		}
		p.NoiseScale = resource.NewMilliQuantity(int64(math.Round(b*1000)), resource.DecimalSI)
	}
	if e := r.EquivalentEpochs; e != nil {
		p.EquivalentEpochs = resource.NewMilliQuantity(int64(math.Round(*e*1000)), resource.DecimalSI)
	}
	batch := int32(r.GlobalBatch)
	var nodes int32
	if len(placement) == int(r.Workers) {
		nodes = int32(api.NodesSpanned(placement))
	}
	i := slices.IndexFunc(p.EpochTimes, func(e v1alpha1.EpochTime) bool {
		return e.Workers == r.Workers && e.GPUType == gpuType && e.Batch == batch && e.Nodes == nodes
	})
	if i < 0 {
		p.EpochTimes = append(p.EpochTimes, v1alpha1.EpochTime{Workers: r.Workers, Millis: ms, Epochs: 1, GPUType: gpuType, Batch: batch, Nodes: nodes})
		slices.SortFunc(p.EpochTimes, func(a, b v1alpha1.EpochTime) int {
			return cmp.Or(strings.Compare(a.GPUType, b.GPUType), int(a.Workers-b.Workers), int(a.Batch-b.Batch), int(a.Nodes-b.Nodes))
		})
		return
	}
	e := &p.EpochTimes[i]
	n := int64(e.Epochs)
	e.Millis = (e.Millis*n + ms) / (n + 1)
	e.Epochs++
}
