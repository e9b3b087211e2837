package mcpclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentmail/mcpclient"
)

// authority is a throwaway CA, and the PEM file of its certificate.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

func newAuthority(t *testing.T, name string) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &authority{cert, key, file}
}

// serverCert is a certificate for 127.0.0.1 that the CA signs.
func (a *authority) serverCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hub"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A hub whose certificate a private CA signed is trusted with that CA in
// AGENTMAIL_CA_FILE, and not without it or with another CA.
func TestPrivateCA(t *testing.T) {
	ca, other := newAuthority(t, "ca"), newAuthority(t, "other")
	h := newHub(t, true)
	h.TLS = &tls.Config{Certificates: []tls.Certificate{ca.serverCert(t)}}
	h.StartTLS()
	ctx := context.Background()
	status := map[string]any{"status": "ready"}
	withCA := func(file string) func(*mcpclient.Config) {
		return func(c *mcpclient.Config) { c.CAFile = file }
	}
	if _, err := client(t, h, "alice", withCA(ca.file)).CallTool(ctx, "status", status, 0); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	for what, file := range map[string]string{"no CA file": "", "another CA": other.file} {
		_, err := client(t, h, "alice", withCA(file)).CallTool(ctx, "status", status, 0)
		wantKind(t, err, mcpclient.ErrCertificate)
		if !strings.Contains(err.Error(), "is not trusted") || !strings.HasSuffix(err.Error(), "set $AGENTMAIL_CA_FILE to the PEM file of the CA that signed it") {
			t.Errorf("%s: %v", what, err)
		}
	}
	if _, err := mcpclient.New(mcpclient.Config{URL: h.URL, CAFile: filepath.Join(t.TempDir(), "none.pem")}); err == nil || !strings.HasPrefix(err.Error(), "$AGENTMAIL_CA_FILE: ") {
		t.Errorf("a CA file that is not there: %v", err)
	}
}
