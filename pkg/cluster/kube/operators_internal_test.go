package kube

import (
	"testing"
	"time"
)

func TestOperatorsWaiting(t *testing.T) {
	placed := time.Date(2026, 11, 27, 10, 0, 0, 300e6, time.UTC)
	job := childKey{"MPIJob", "ml", "bert"}
	other := childKey{"MPIJob", "ml", "gpt"}
	o := newOperators(time.Minute)
	at := func(d time.Duration) time.Time { return placed.Add(d) }

	if wait, _ := o.waiting(job, placed, at(6*time.Minute)); wait {
		t.Error("an operator that never created a pod is idle, yet the clock waits")
	}
	o.podCreated("MPIJob", at(5*time.Minute+30*time.Second))
	if wait, said := o.waiting(job, placed, at(6*time.Minute)); !wait || said != "" {
		t.Errorf("busy operator (a pod 30 s ago): waiting %v, %q", wait, said)
	}
	if wait, _ := o.waiting(childKey{"PyTorchJob", "ml", "bert"}, placed, at(6*time.Minute)); wait {
		t.Error("mpi-operator's pods make the PyTorch operator busy")
	}
	if wait, _ := o.waiting(job, placed, at(6*time.Minute+31*time.Second)); wait {
		t.Error("an operator idle for 61 s still holds the clock")
	}
	o.podCreated("MPIJob", at(4*time.Minute)) // older: changes nothing
	if wait, _ := o.waiting(job, placed, at(6*time.Minute+31*time.Second)); wait {
		t.Error("an older creation made the operator busy again")
	}

	// A complaint about the job from before its placement is an old run's.
	o.warn(job, warning{at: placed.Add(-time.Minute), message: "MPIJobFailed: old"})
	if wait, _ := o.waiting(job, placed, at(6*time.Minute)); !wait {
		t.Error("a complaint from before the placement stops the wait")
	}
	// One in the placement's second counts (Event times are whole seconds).
	o.warn(job, warning{at: placed.Truncate(time.Second), message: "MPIJobFailed: worker pod created failed: exceeded quota"})
	wait, said := o.waiting(job, placed, at(6*time.Minute))
	if wait || said != "MPIJobFailed: worker pod created failed: exceeded quota" {
		t.Errorf("operator that cannot create the job's pods: waiting %v, %q", wait, said)
	}
	if wait, _ := o.waiting(other, placed, at(6*time.Minute)); !wait {
		t.Error("a complaint about one job stops another's wait")
	}
	// An older complaint arriving late does not hide the newer one.
	o.warn(job, warning{at: placed.Add(-time.Hour), message: "older"})
	if _, said := o.waiting(job, placed, at(6*time.Minute)); said != "MPIJobFailed: worker pod created failed: exceeded quota" {
		t.Errorf("said %q after an older complaint", said)
	}
}

func TestComplaint(t *testing.T) {
	for reason, want := range map[string]bool{
		"FailedCreatePod": true, "FailedCreateService": true, "MPIJobFailed": true, "ErrResourceExists": true,
		// The training operator repeats its pods' conditions as Warnings.
		"SchedulingGated": false, "Unschedulable": false, "BackOff": false, "": false,
	} {
		if got := complaint(reason); got != want {
			t.Errorf("complaint(%q) = %v, want %v", reason, got, want)
		}
	}
}
