package v1alpha1

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vodascheduler/voda/pkg/api"
)

// Validate checks a new TrainingJob as a client would want it checked before
// anything is created: every problem is reported, each naming the field to
// fix. The API server's schema checks the same rules and more; this gives
// the REST API and the CLI messages in the job's own terms.
func (tj *TrainingJob) Validate() error {
	var errs []error
	if tj.Kind != "" && tj.Kind != "TrainingJob" {
		errs = append(errs, fmt.Errorf("kind is %q, want TrainingJob", tj.Kind))
	}
	if tj.APIVersion != "" && tj.APIVersion != GroupVersion.String() {
		errs = append(errs, fmt.Errorf("apiVersion is %q, want %s", tj.APIVersion, GroupVersion))
	}
	switch {
	case tj.Name == "":
		errs = append(errs, errors.New("metadata.name is missing"))
	default:
		// The name also names the MPIJob's Service and labels its pods.
		if msgs := validation.IsDNS1035Label(tj.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("metadata.name %q: %s", tj.Name, strings.Join(msgs, "; ")))
		}
	}
	s := tj.Spec
	if s.GPUType == "" {
		errs = append(errs, errors.New("spec.gpuType is missing (the GPU type the job runs on, a value of the node label "+AcceleratorLabel+")"))
	} else if msgs := validation.IsValidLabelValue(s.GPUType); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("spec.gpuType %q: %s", s.GPUType, strings.Join(msgs, "; ")))
	}
	js := api.JobSpec{
		GPUType: "t", MinWorkers: int(s.MinWorkers), MaxWorkers: int(s.MaxWorkers),
		RequestedWorkers: int(s.RequestedWorkers), Priority: int(s.Priority), Epochs: int(s.Epochs),
	}
	if err := js.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("spec: %w", err))
	}
	if len(s.Category) > 253 {
		errs = append(errs, fmt.Errorf("spec.category is %d characters long, at most 253 allowed", len(s.Category)))
	}
	if m := s.Template.MPIJob; m == nil {
		errs = append(errs, errors.New("spec.template.mpiJob is missing (the only runtime of "+GroupVersion.Version+")"))
	} else {
		if len(m.Launcher.Spec.Containers) == 0 {
			errs = append(errs, errors.New("spec.template.mpiJob.launcher has no container"))
		}
		if len(m.Worker.Spec.Containers) == 0 {
			errs = append(errs, errors.New("spec.template.mpiJob.worker has no container"))
		}
	}
	return errors.Join(errs...)
}
