package progress

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/vodascheduler/voda/pkg/apis/vodascheduler/v1alpha1"
)

// ParseCSV reads the original Voda's metrics file, <metrics-dir>/<job>.csv,
// which its Keras callback appends one row per epoch to: a header with
// epoch and the sorted log keys, among them workers, epoch_time_sec,
// step_time_sec, steps, local_batch_size and global_batch_size. epoch
// counts from 0. Columns it does not know (loss, accuracy…) are ignored;
// a row that cannot be read is an error naming its line.
func ParseCSV(r io.Reader) ([]Report, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 0
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"epoch", "workers"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("the header has no %q column (want the original Voda's metrics CSV)", need)
		}
	}
	_, hasEpochTime := col["epoch_time_sec"]
	_, hasStepTime := col["step_time_sec"]
	_, hasSteps := col["steps"]
	if !hasEpochTime && !(hasStepTime && hasSteps) {
		return nil, errors.New("the header has neither epoch_time_sec nor step_time_sec and steps")
	}
	var out []Report
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, err
		}
		num := func(name string) (float64, bool, error) {
			i, ok := col[name]
			if !ok || strings.TrimSpace(rec[i]) == "" {
				return 0, false, nil
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil {
				return 0, false, fmt.Errorf("line %d: %s %q is not a number", line, name, rec[i])
			}
			return v, true, nil
		}
		var r Report
		var errs []error
		get := func(name string) float64 {
			v, _, err := num(name)
			errs = append(errs, err)
			return v
		}
		epoch, workers := get("epoch"), get("workers")
		r.Epoch, r.Workers = int32(epoch)+1, int32(workers)
		r.EpochSeconds, r.StepSeconds = get("epoch_time_sec"), get("step_time_sec")
		r.Steps = int64(get("steps"))
		r.LocalBatch, r.GlobalBatch = int64(get("local_batch_size")), int64(get("global_batch_size"))
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		if epoch != float64(int32(epoch)) || workers != float64(int32(workers)) {
			return nil, fmt.Errorf("line %d: epoch and workers must be whole numbers", line)
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, r)
	}
}

// Summarise folds reports into a progress summary, as if received at now.
func Summarise(reports []Report, now time.Time) *v1alpha1.TrainingProgress {
	p := &v1alpha1.TrainingProgress{}
	for _, r := range reports {
		Add(p, r, "", nil, now)
	}
	return p
}
