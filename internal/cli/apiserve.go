package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vodascheduler/voda/pkg/cluster/kube"
	"github.com/vodascheduler/voda/pkg/server"
)

// apiFlags configure the REST API served by `voda controller`.
type apiFlags struct {
	addr, certFile, keyFile string
	auth, tokenFile         string
	audiences               string
	adminGroups             string
	namespace               string
	maxBody                 int64
	ui                      bool
	authTTL                 time.Duration
	// flags is the flag set add registered them in: check asks it which
	// were given.
	flags *pflag.FlagSet
}

func (a *apiFlags) add(f *pflag.FlagSet) {
	a.flags = f
	f.StringVar(&a.addr, "api-addr", ":8088", `address of the REST API (voda create/get/describe/delete); "0" disables it`)
	f.StringVar(&a.certFile, "api-tls-cert-file", "", "PEM certificate of the REST API; with --api-tls-key-file it serves HTTPS")
	f.StringVar(&a.keyFile, "api-tls-key-file", "", "PEM private key of the REST API's certificate")
	f.StringVar(&a.auth, "api-auth", "tokenreview", "how the REST API checks bearer tokens: tokenreview (the Kubernetes TokenReview API) or static (--api-token-file)")
	f.StringVar(&a.tokenFile, "api-token-file", "", `static tokens, one CSV line each: token,user,uid,"group1,group2"`)
	f.DurationVar(&a.authTTL, "api-auth-cache-ttl", 10*time.Second, "with --api-auth tokenreview, how long a token the API server accepted is remembered: a dashboard authenticates every page, and each TokenReview waits behind the writes when many jobs start; a revoked token works this much longer; 0 asks for every request")
	f.StringVar(&a.audiences, "api-token-audiences", "", "comma-separated audiences a token must be made for, with --api-auth tokenreview (e.g. voda, and users run kubectl create token SA --audience voda); empty accepts the API server's own, so any pod's service-account token logs in")
	f.StringVar(&a.adminGroups, "api-admin-groups", "system:masters,"+server.DefaultAdminGroup, "comma-separated groups whose members see every job and change schedulers")
	f.StringVar(&a.namespace, "api-namespace", "", "namespace of the jobs submitted through the REST API (default --namespace, else the pod's, else default)")
	f.BoolVar(&a.ui, "ui", true, "serve the web dashboard under /ui/ on the REST API's address, with the API's tokens (docs/dashboard.md)")
	f.Int64Var(&a.maxBody, "api-max-body-bytes", server.DefaultMaxBodyBytes, "largest request body the REST API accepts")
}

// check validates the flags before anything starts.
func (a *apiFlags) check() error {
	if a.addr == "0" || a.addr == "" {
		return nil
	}
	switch a.auth {
	case "tokenreview":
		if a.tokenFile != "" {
			return usageError{errors.New("--api-token-file needs --api-auth static")}
		}
	case "static":
		if a.tokenFile == "" {
			return usageError{errors.New("--api-auth static needs --api-token-file")}
		}
		if a.audiences != "" {
			return usageError{errors.New("--api-token-audiences needs --api-auth tokenreview: static tokens have no audience")}
		}
		if a.flags != nil && a.flags.Changed("api-auth-cache-ttl") {
			return usageError{errors.New("--api-auth-cache-ttl needs --api-auth tokenreview: static tokens are checked in memory, with nothing to remember")}
		}
	default:
		return usageError{fmt.Errorf("--api-auth %q: want tokenreview or static", a.auth)}
	}
	if (a.certFile == "") != (a.keyFile == "") {
		return usageError{errors.New("--api-tls-cert-file and --api-tls-key-file go together")}
	}
	if a.authTTL < 0 {
		return usageError{fmt.Errorf("--api-auth-cache-ttl %s: want 0 (ask the API server for every request) or a positive duration", a.authTTL)}
	}
	if a.maxBody <= 0 {
		return usageError{errors.New("--api-max-body-bytes must be positive")}
	}
	return nil
}

// addTo adds the REST API to the manager, serving on every replica.
func (a *apiFlags) addTo(mgr ctrl.Manager, cfg *rest.Config, o kube.ManagerOptions, kc *kube.Controller) error {
	if a.addr == "0" || a.addr == "" {
		return nil
	}
	// Reads go straight to the API server, so a job is visible the moment
	// it is created.
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return err
	}
	auth := server.RememberAccepted(server.TokenReview{Client: c, Audiences: splitList(a.audiences)}, a.authTTL)
	if a.auth == "static" {
		if auth, err = server.LoadTokenFile(a.tokenFile); err != nil {
			return usageError{fmt.Errorf("--api-token-file: %w", err)}
		}
	}
	groups := splitList(a.adminGroups)
	ns := a.namespace
	switch {
	case ns != "":
	case o.Namespace != "":
		ns = o.Namespace
	default:
		ns = podNamespace("")
	}
	if o.Namespace != "" && ns != o.Namespace {
		return usageError{fmt.Errorf("--api-namespace %s is outside --namespace %s: the controller would never see those jobs", ns, o.Namespace)}
	}
	if err := kube.IndexJobEvents(context.Background(), mgr); err != nil {
		return err
	}
	s, err := server.New(c, auth, server.Options{
		Namespace: ns, AdminGroups: groups,
		DefaultAlgorithm: o.Policy, DefaultRateLimit: o.RateLimit, Algorithm: o.Algorithm, ConfigNamespace: o.ConfigNamespace,
		Accelerators: o.Accelerators,
		MaxBodyBytes: a.maxBody, Version: Version, UI: a.ui,
		Registerer: ctrlmetrics.Registry, Gatherer: ctrlmetrics.Registry,
		Log: o.Log.WithName("api"),
		// The dashboard's and the schedulers' reads of the whole cluster
		// come from the controller's caches, which every replica keeps.
		Cache: mgr.GetCache(), OtherGPUs: kc.OtherGPUsByNode, Events: mgr.GetCache(),
	})
	if err != nil {
		return err
	}
	return mgr.Add(&server.Listener{Addr: a.addr, CertFile: a.certFile, KeyFile: a.keyFile, Handler: s.Handler()})
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
