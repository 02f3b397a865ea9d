package v1alpha1

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Privileges reports what a job's pod templates ask for beyond a plain pod
// of the namespace's default service account: another service account,
// the namespace's secrets (volumes, projected tokens, environment), the
// node's namespaces or file system, and privileged containers. Voda's REST
// API creates jobs in one namespace on behalf of any authenticated user,
// who holds no rights there of their own, so such a job would run with
// rights its submitter was never given (the controller's own service
// account, say); the API refuses them from users who are not admins. Each
// problem names the field.
func (s *TrainingJobSpec) Privileges() error {
	var errs []error
	for _, p := range s.Template.podTemplates() {
		errs = append(errs, podPrivileges(p.field+".spec", &p.tmpl.Spec)...)
	}
	return errors.Join(errs...)
}

type namedTemplate struct {
	field string
	tmpl  *corev1.PodTemplateSpec
}

// podTemplates returns every pod template of the job's runtime with the
// path that names it.
func (t *TrainingJobTemplate) podTemplates() []namedTemplate {
	var out []namedTemplate
	if m := t.MPIJob; m != nil {
		out = append(out, namedTemplate{"spec.template.mpiJob.launcher", &m.Launcher}, namedTemplate{"spec.template.mpiJob.worker", &m.Worker})
	}
	if p := t.PyTorchJob; p != nil {
		out = append(out, namedTemplate{"spec.template.pytorchJob.worker", &p.Worker})
	}
	return out
}

func podPrivileges(field string, p *corev1.PodSpec) []error {
	var errs []error
	bad := func(what, why string) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", field, what, why))
	}
	for _, sa := range [...]struct{ what, name string }{{"serviceAccountName", p.ServiceAccountName}, {"serviceAccount", p.DeprecatedServiceAccount}} {
		if sa.name != "" && sa.name != "default" {
			bad(sa.what, fmt.Sprintf("%q: the job's pods would run as that service account", sa.name))
		}
	}
	if p.HostNetwork || p.HostPID || p.HostIPC {
		bad("hostNetwork/hostPID/hostIPC", "the pods would share the node's namespaces")
	}
	for i, v := range p.Volumes {
		at := fmt.Sprintf("volumes[%d]", i)
		switch {
		case v.Secret != nil:
			bad(at+".secret", fmt.Sprintf("mounts secret %q", v.Secret.SecretName))
		case v.HostPath != nil:
			bad(at+".hostPath", fmt.Sprintf("mounts the node's %s", v.HostPath.Path))
		case v.Projected != nil:
			for j, src := range v.Projected.Sources {
				switch {
				case src.Secret != nil:
					bad(fmt.Sprintf("%s.projected.sources[%d].secret", at, j), fmt.Sprintf("mounts secret %q", src.Secret.Name))
				case src.ServiceAccountToken != nil:
					bad(fmt.Sprintf("%s.projected.sources[%d].serviceAccountToken", at, j), "mounts a service account token")
				}
			}
		}
	}
	containers := func(kind string, cs []corev1.Container) {
		for i := range cs {
			c := &cs[i]
			at := fmt.Sprintf("%s[%d]", kind, i)
			for k, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					bad(fmt.Sprintf("%s.env[%d].valueFrom.secretKeyRef", at, k), fmt.Sprintf("reads secret %q", e.ValueFrom.SecretKeyRef.Name))
				}
			}
			for k, e := range c.EnvFrom {
				if e.SecretRef != nil {
					bad(fmt.Sprintf("%s.envFrom[%d].secretRef", at, k), fmt.Sprintf("reads secret %q", e.SecretRef.Name))
				}
			}
			if sc := c.SecurityContext; sc != nil {
				if sc.Privileged != nil && *sc.Privileged {
					bad(at+".securityContext.privileged", "a privileged container holds the node")
				}
				if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
					bad(at+".securityContext.capabilities.add", fmt.Sprintf("adds %v", sc.Capabilities.Add))
				}
			}
		}
	}
	containers("initContainers", p.InitContainers)
	containers("containers", p.Containers)
	return errs
}
