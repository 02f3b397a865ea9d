package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the key material the environment generates at start: nothing is
// reused between runs and nothing leaves the temp dir.
type pki struct {
	dir string

	caCert, caKey           string // files: the cluster CA, also the client CA
	servingCert, servingKey string // kube-apiserver's serving certificate
	adminCert, adminKey     string // a client of user "admin" in group system:masters
	saKey                   string // the service-account signing key (private; the public half is derived)

	caPEM, adminCertPEM, adminKeyPEM []byte // for the rest.Config and kubeconfig
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "voda-testenv-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, caCert, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	if p.caCert, p.caKey, err = p.write("ca", caDER, caKey); err != nil {
		return nil, err
	}
	p.caPEM = pemCert(caDER)

	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	if p.servingCert, p.servingKey, _, _, err = p.leaf("apiserver", serving, caCert, caKey); err != nil {
		return nil, err
	}

	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if p.adminCert, p.adminKey, p.adminCertPEM, p.adminKeyPEM, err = p.leaf("admin", admin, caCert, caKey); err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	p.saKey = filepath.Join(dir, "sa.key")
	keyPEM, err := pemKey(saKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saKey, keyPEM, 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// leaf creates a key and a certificate signed by the CA and writes both.
func (p *pki) leaf(name string, tmpl, ca *x509.Certificate, caKey crypto.Signer) (certFile, keyFile string, certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, nil, err
	}
	der, _, err := sign(tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", nil, nil, fmt.Errorf("%s certificate: %w", name, err)
	}
	if certFile, keyFile, err = p.write(name, der, key); err != nil {
		return "", "", nil, nil, err
	}
	keyPEM, err = pemKey(key)
	return certFile, keyFile, pemCert(der), keyPEM, err
}

func (p *pki) write(name string, der []byte, key *ecdsa.PrivateKey) (certFile, keyFile string, err error) {
	certFile = filepath.Join(p.dir, name+".crt")
	keyFile = filepath.Join(p.dir, name+".key")
	if err := os.WriteFile(certFile, pemCert(der), 0o600); err != nil {
		return "", "", err
	}
	keyPEM, err := pemKey(key)
	if err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, keyPEM, 0o600)
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return der, cert, err
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
