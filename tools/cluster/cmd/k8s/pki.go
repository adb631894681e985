package main

// A small PKI for the local control plane: one cluster CA, one front-proxy CA, the serving
// certificate of the apiserver and the client certificates of each component, generated with
// crypto/x509 so that a fresh machine needs no openssl.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type certSpec struct {
	name   string // file prefix
	ca     string // prefix of the signing CA
	cn     string
	orgs   []string
	server bool
	dns    []string
	ips    []net.IP
}

const validity = 10 * 365 * 24 * time.Hour

// runPKI writes the whole PKI into dir, keeping any file that already exists.
func runPKI(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: k8s pki DIR")
	}
	dir := args[0]
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, ca := range []struct{ name, cn string }{{"ca", "vkubelet-local-ca"}, {"front-proxy-ca", "vkubelet-local-front-proxy-ca"}} {
		if err := ensureCA(dir, ca.name, ca.cn); err != nil {
			return err
		}
	}
	specs := []certSpec{
		{name: "apiserver", ca: "ca", cn: "kube-apiserver", server: true,
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}},
		{name: "admin", ca: "ca", cn: "kubernetes-admin", orgs: []string{"system:masters"}},
		{name: "kube-controller-manager", ca: "ca", cn: "system:kube-controller-manager"},
		{name: "kube-scheduler", ca: "ca", cn: "system:kube-scheduler"},
		{name: "apiserver-kubelet-client", ca: "ca", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
		{name: "front-proxy-client", ca: "front-proxy-ca", cn: "front-proxy-client"},
	}
	for _, s := range specs {
		if _, err := os.Stat(filepath.Join(dir, s.name+".crt")); err == nil {
			continue
		}
		if err := issue(dir, s); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sa.key")); err != nil {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		if err := writeKey(filepath.Join(dir, "sa.key"), key); err != nil {
			return err
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runCert issues one certificate from an existing CA; tests use it for node identities and
// kubelet serving certificates.
func runCert(args []string) error {
	fs := flag.NewFlagSet("cert", flag.ContinueOnError)
	caPrefix := fs.String("ca", "", "path prefix of the signing CA (PREFIX.crt, PREFIX.key)")
	out := fs.String("out", "", "path prefix of the certificate to write (PREFIX.crt, PREFIX.key)")
	cn := fs.String("cn", "", "common name (the user name)")
	orgs := fs.String("o", "", "comma-separated organisations (the groups)")
	sans := fs.String("san", "", "comma-separated DNS names and IP addresses; makes a serving certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *caPrefix == "" || *out == "" || *cn == "" {
		return errors.New("usage: k8s cert --ca PREFIX --out PREFIX --cn NAME [--o ORG,...] [--san NAME,IP,...]")
	}
	s := certSpec{name: filepath.Base(*out), ca: *caPrefix, cn: *cn, server: *sans != ""}
	if *orgs != "" {
		s.orgs = strings.Split(*orgs, ",")
	}
	for _, san := range strings.Split(*sans, ",") {
		if ip := net.ParseIP(san); ip != nil {
			s.ips = append(s.ips, ip)
		} else if san != "" {
			s.dns = append(s.dns, san)
		}
	}
	return issueTo(filepath.Dir(*out), *caPrefix, s)
}

func ensureCA(dir, name, cn string) error {
	if _, err := os.Stat(filepath.Join(dir, name+".crt")); err == nil {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, name+".key"), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der, 0o644)
}

func issue(dir string, s certSpec) error {
	return issueTo(dir, filepath.Join(dir, s.ca), s)
}

func issueTo(dir, caPrefix string, s certSpec) error {
	caCert, caKey, err := loadCA(caPrefix)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if s.server {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
		DNSNames:     s.dns,
		IPAddresses:  s.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, s.name+".key"), key); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, s.name+".crt"), "CERTIFICATE", der, 0o644)
}

func loadCA(prefix string) (*x509.Certificate, any, error) {
	certPEM, err := os.ReadFile(prefix + ".crt")
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(prefix + ".key")
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s.crt or %s.key is not PEM", prefix, prefix)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
