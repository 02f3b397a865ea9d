package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/vodascheduler/voda/deploy/crds"
)

// Options configure an environment. The zero value is ready to use except
// for Dir.
type Options struct {
	// Dir holds data, certificates, the kubeconfig and logs (logs/<component>.log).
	Dir string
	// BinDir holds the binaries; empty means BinDir().
	BinDir string
	// NoMPIOperator skips the MPIJob CRD and mpi-operator, and the
	// PyTorchJob CRD and training-operator too (they take turns on a
	// machine together).
	NoMPIOperator bool
	// NoTrainingOperator skips only the PyTorchJob CRD and the
	// training-operator.
	NoTrainingOperator bool
	// ComponentQPS, if set, is the client rate (requests a second,
	// twice that in bursts) of kube-scheduler, mpi-operator and the
	// training-operator; 0 leaves kube-scheduler at its default (50) and
	// the operators at 100. A benchmark raises it to see what Voda itself
	// allows.
	ComponentQPS int
	// Logf, if set, receives progress lines.
	Logf func(format string, args ...any)
}

// Env is a running control plane.
type Env struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig for kubectl and the
	// components.
	Kubeconfig string
	// Dir is the environment's working directory; logs are in Dir/logs.
	Dir string
	// Client and Dynamic are clients built from Config.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// StartupTime is how long Start took until every component was ready.
	StartupTime time.Duration

	opts     Options
	bin      string
	pki      *pki
	mu       sync.Mutex
	procs    []*process
	lock     *os.File // held while mpi-operator runs; see lockMPIOperator
	stopOnce sync.Once
	stopping bool // set by Stop, under mu: supervised processes stay down
	// cosched is set once StartCoscheduling succeeded; guarded by coschedMu.
	coschedMu sync.Mutex
	cosched   bool
}

// Start starts every component and returns when all are ready. On error it
// stops what it started. The caller must call Stop.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	begin := time.Now()
	if opts.Dir == "" {
		return nil, errors.New("testenv: Options.Dir is required")
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	bin := opts.BinDir
	if bin == "" {
		if bin, err = BinDir(); err != nil {
			return nil, err
		}
	}
	e := &Env{Dir: opts.Dir, opts: opts, bin: bin}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if !opts.NoMPIOperator {
		// Before anything starts, so a waiting environment costs nothing.
		if e.lock, err = lockMPIOperator(ctx, opts.Logf); err != nil {
			return nil, err
		}
		begin = time.Now() // the startup time leaves out the wait
	}
	for _, d := range []string{"logs", "etcd", "pki", "kwok"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	if e.pki, err = newPKI(filepath.Join(e.Dir, "pki")); err != nil {
		return nil, fmt.Errorf("generate certificates: %w", err)
	}
	// etcd client and peer, kube-apiserver, kube-controller-manager, kube-scheduler.
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	if err := e.startEtcd(ctx, ports[0], ports[1]); err != nil {
		return nil, err
	}
	if err := e.startAPIServer(ctx, ports[0], ports[2]); err != nil {
		return nil, err
	}
	if err := e.startControllers(ctx, ports[3], ports[4]); err != nil {
		return nil, err
	}
	e.StartupTime = time.Since(begin)
	opts.Logf("testenv: control plane ready in %s (logs in %s)", e.StartupTime.Round(time.Millisecond), filepath.Join(e.Dir, "logs"))
	return e, nil
}

// startControllers starts the controller manager, the scheduler, kwok and
// (unless disabled) mpi-operator, once the API server is ready. They start
// together and are then waited on.
func (e *Env) startControllers(ctx context.Context, kcmPort, schedPort int) error {
	kcm, err := e.startControllerManager(kcmPort)
	if err != nil {
		return err
	}
	sched, err := e.startScheduler(schedPort)
	if err != nil {
		return err
	}
	kwok, err := e.startKwok()
	if err != nil {
		return err
	}
	if !e.opts.NoMPIOperator {
		if err := e.applyMPIJobCRD(ctx); err != nil {
			return err
		}
	}
	if e.trainingOperator() {
		if err := e.applyPyTorchJobCRD(ctx); err != nil {
			return err
		}
	}
	for _, crd := range [][]byte{crds.TrainingJob, crds.ClusterQueue, crds.LocalQueue} {
		if err := e.ApplyCRDs(ctx, crd); err != nil {
			return err
		}
	}
	if err := e.waitHealthy(ctx, kcm, kcmPort); err != nil {
		return err
	}
	if err := e.waitHealthy(ctx, sched, schedPort); err != nil {
		return err
	}
	// The controller manager creates each namespace's default service account;
	// pods cannot be created before it exists.
	if err := e.WaitServiceAccount(ctx, "default"); err != nil {
		return err
	}
	if !e.opts.NoMPIOperator {
		if err := e.startMPIOperator(ctx); err != nil {
			return err
		}
	}
	if e.trainingOperator() {
		if err := e.startTrainingOperator(ctx); err != nil {
			return err
		}
	}
	if dead, err := kwok.exited(); dead {
		return fmt.Errorf("%w\n%s", err, kwok.tail(30))
	}
	return nil
}

// trainingOperator reports whether the environment runs the training-operator.
func (e *Env) trainingOperator() bool { return !e.opts.NoMPIOperator && !e.opts.NoTrainingOperator }

// Stop ends every process the environment started, newest first, by PID:
// SIGTERM, then SIGKILL after a grace period. It is safe to call more than once.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.stopping = true
		procs := e.procs
		e.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			if err := procs[i].stop(stopGrace); err != nil {
				e.opts.Logf("testenv: %v", err)
			}
		}
		if e.lock != nil {
			_ = e.lock.Close()
		}
	})
}

// Logs returns the last n lines of every component's log, for a failed test.
func (e *Env) Logs(n int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, p := range e.procs {
		fmt.Fprintf(&b, "----- %s (%s), last %d lines -----\n%s\n", p.name, p.logPath, n, p.tail(n))
	}
	return b.String()
}

// LogLines returns the last n lines of a component's log that contain
// match, for a failed test to show what that component did about one
// object.
func (e *Env) LogLines(component, match string, n int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.procs {
		if p.name == component {
			return tailFile(p.logPath, n, match)
		}
	}
	return fmt.Sprintf("(no component %q)", component)
}

func (e *Env) start(name, bin string, args []string, env ...string) (*process, error) {
	p, err := startProcess(name, filepath.Join(e.bin, bin), args, filepath.Join(e.Dir, "logs"), env...)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	e.opts.Logf("testenv: started %s (pid %d)", name, p.cmd.Process.Pid)
	if supervised[name] {
		go e.supervise(p)
	}
	return p, nil
}

// supervised are the components restarted when they exit, as the
// Deployment or static pod that runs them in a cluster would: the
// controllers exit on purpose when they lose their leader lease (during a
// control-plane outage, for instance). etcd and kube-apiserver are not:
// Outage stops and starts them.
var supervised = map[string]bool{
	"kube-controller-manager": true, "kube-scheduler": true, "kwok": true,
	"mpi-operator": true, "training-operator": true,
	"scheduler-plugins-scheduler": true, "scheduler-plugins-controller": true,
}

// supervise restarts p, and what replaces it, each time it exits, until
// the environment stops.
func (e *Env) supervise(p *process) {
	for {
		<-p.done
		time.Sleep(time.Second) // as a crash-looping pod's first back-off
		e.mu.Lock()
		i := slices.Index(e.procs, p)
		if e.stopping || i < 0 {
			e.mu.Unlock()
			return
		}
		np, err := restartProcess(p)
		if err != nil {
			e.mu.Unlock()
			e.opts.Logf("testenv: %s exited (%v) and could not be restarted: %v", p.name, p.err, err)
			return
		}
		e.procs[i] = np
		e.mu.Unlock()
		e.opts.Logf("testenv: %s exited (%v); restarted it (pid %d)", p.name, p.err, np.cmd.Process.Pid)
		p = np
	}
}

// writeKubeconfig writes the admin kubeconfig and builds the clients.
func (e *Env) writeKubeconfig(host string) error {
	e.Config = &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   e.pki.caPEM,
			CertData: e.pki.adminCertPEM,
			KeyData:  e.pki.adminKeyPEM,
		},
		QPS:   100,
		Burst: 200,
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["voda"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: e.pki.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.pki.adminCertPEM, ClientKeyData: e.pki.adminKeyPEM}
	cfg.Contexts["voda"] = &clientcmdapi.Context{Cluster: "voda", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "voda"
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, e.Kubeconfig); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	var err error
	if e.Client, err = kubernetes.NewForConfig(e.Config); err != nil {
		return err
	}
	e.Dynamic, err = dynamic.NewForConfig(e.Config)
	return err
}

// logsIn returns the last lines of every log under dir/logs; Start uses it
// when it failed and has already stopped its processes.
func logsIn(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "----- %s, last %d lines -----\n%s\n", f, logTailLines, tailFile(f, logTailLines, ""))
	}
	return b.String()
}
