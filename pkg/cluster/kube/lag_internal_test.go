package kube

import "testing"

// The script is mpi-operator's, byte for byte: workers sorted by pod name
// (worker-10 before worker-2), behind the job's Service, after a shebang.
func TestDiscoverHostsAsMPIOperatorWritesIt(t *testing.T) {
	want := "#!/bin/sh\n" +
		"echo j-worker-0.j.ns.svc\n" +
		"echo j-worker-1.j.ns.svc\n" +
		"echo j-worker-10.j.ns.svc\n" +
		"echo j-worker-11.j.ns.svc\n" +
		"echo j-worker-2.j.ns.svc\n" +
		"echo j-worker-3.j.ns.svc\n" +
		"echo j-worker-4.j.ns.svc\n" +
		"echo j-worker-5.j.ns.svc\n" +
		"echo j-worker-6.j.ns.svc\n" +
		"echo j-worker-7.j.ns.svc\n" +
		"echo j-worker-8.j.ns.svc\n" +
		"echo j-worker-9.j.ns.svc\n"
	if got := discoverHosts("j", "ns", 12); got != want {
		t.Errorf("discoverHosts(j, ns, 12) =\n%s\nwant\n%s", got, want)
	}
	if got := discoverHosts("j", "ns", 0); got != "#!/bin/sh\n" {
		t.Errorf("no workers: %q", got)
	}
}
