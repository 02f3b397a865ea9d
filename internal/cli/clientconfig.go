package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/pkg/client"
)

// Environment variables of the client commands.
const (
	envServer = "VODA_SERVER"
	envToken  = "VODA_TOKEN"
	envConfig = "VODA_CONFIG"
)

// errNoServer is the error of a client command when no server is given.
var errNoServer = errors.New("no Voda server")

// fileConfig is the client configuration file (YAML).
type fileConfig struct {
	Server                string `json:"server,omitempty"`
	Token                 string `json:"token,omitempty"`
	CertificateAuthority  string `json:"certificateAuthority,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
}

// clientFlags are the connection flags of every command that talks to the
// REST API.
type clientFlags struct {
	config, server, token, caFile string
	insecure                      bool
	timeout                       time.Duration
}

const clientHelp = `
The server and token come from --server and --token, else the environment
(VODA_SERVER, VODA_TOKEN), else the config file (--config, VODA_CONFIG or
~/.config/voda/config.yaml):

  server: https://voda.example.com:8443
  token: <a Kubernetes service-account or user token>
  certificateAuthority: /path/to/ca.pem   # for an HTTPS server
`

func (f *clientFlags) add(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.server, "server", "", "URL of the Voda API, e.g. https://voda.example.com:8443 (env "+envServer+")")
	pf.StringVar(&f.token, "token", "", "bearer token for the API (env "+envToken+")")
	pf.StringVar(&f.config, "config", "", "client config file (env "+envConfig+"; default ~/.config/voda/config.yaml)")
	pf.StringVar(&f.caFile, "certificate-authority", "", "PEM file of the CA that signed the server's certificate")
	pf.BoolVar(&f.insecure, "insecure-skip-tls-verify", false, "do not check the server's certificate (insecure)")
	pf.DurationVar(&f.timeout, "request-timeout", 30*time.Second, "give up on a request after this long")
}

// defaultConfigPath is ~/.config/voda/config.yaml (or the platform's
// equivalent).
func defaultConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "voda", "config.yaml")
}

// resolve merges flags, environment and config file, in that order of
// precedence.
func (f *clientFlags) resolve() (client.Config, error) {
	path, explicit := f.config, f.config != ""
	if !explicit {
		path, explicit = os.Getenv(envConfig), os.Getenv(envConfig) != ""
	}
	if !explicit {
		path = defaultConfigPath()
	}
	var fc fileConfig
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			if err := yaml.UnmarshalStrict(data, &fc); err != nil {
				return client.Config{}, usageError{fmt.Errorf("config file %s: %w (want server, token, certificateAuthority, insecureSkipTLSVerify)", path, err)}
			}
		case errors.Is(err, fs.ErrNotExist) && !explicit:
		default:
			return client.Config{}, usageError{fmt.Errorf("config file: %w", err)}
		}
	}
	cfg := client.Config{
		Server:             first(f.server, os.Getenv(envServer), fc.Server),
		Token:              first(f.token, os.Getenv(envToken), fc.Token),
		CAFile:             first(f.caFile, fc.CertificateAuthority),
		InsecureSkipVerify: f.insecure || fc.InsecureSkipTLSVerify,
		Timeout:            f.timeout,
	}
	if cfg.Server == "" {
		return cfg, usageError{fmt.Errorf("%w: pass --server URL, set %s, or write 'server: URL' in %s", errNoServer, envServer, orDefault(path, "~/.config/voda/config.yaml"))}
	}
	return cfg, nil
}

// client builds an API client from the flags.
func (f *clientFlags) client() (*client.Client, error) {
	cfg, err := f.resolve()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
