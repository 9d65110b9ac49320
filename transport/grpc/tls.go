package grpctransport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSOptions configure mutual TLS for every connection of a Service, the ones it serves and the
// ones it dials: each side presents its certificate and accepts only a peer whose certificate
// chains to the cluster's CA (the truststore). A peer without such a certificate is refused in
// the TLS handshake, before any call reaches an endpoint. Flink: security.ssl.internal.*, whose
// internal connectivity is mutually authenticated the same way.
//
// The certificate and the CA come either from PEM files (Keystore*, Truststore) or as values
// (Certificate, CAs), which take precedence. The server name checked is the host of the address
// dialed: certificates must name the hosts (or IPs) peers dial them at (Flink:
// security.ssl.verify-hostname, default true). Where we differ: Flink reads JKS or PKCS12
// keystores with passwords; ours are PEM files.
type TLSOptions struct {
	// Enabled turns mutual TLS on. Flink: security.ssl.internal.enabled (default false).
	Enabled bool
	// KeystoreCertFile and KeystoreKeyFile are PEM files with this process's certificate chain
	// and its private key. Flink: security.ssl.internal.keystore (with
	// security.ssl.internal.keystore-password and security.ssl.internal.key-password).
	KeystoreCertFile string
	KeystoreKeyFile  string
	// TruststoreFile is a PEM file with the cluster CA's certificate(s). Flink:
	// security.ssl.internal.truststore.
	TruststoreFile string
	// Certificate, if it has a certificate, is used instead of the keystore files.
	Certificate tls.Certificate
	// CAs, if not nil, is used instead of the truststore file.
	CAs *x509.CertPool
	// MinVersion is the lowest TLS version accepted; TLS 1.2 when 0. Flink:
	// security.ssl.protocol (TLSv1.2).
	MinVersion uint16
}

// configs builds the server's and the client's tls.Config. Errors name the file or the option
// that is missing or malformed.
func (o *TLSOptions) configs() (server, client *tls.Config, err error) {
	cert := o.Certificate
	if len(cert.Certificate) == 0 {
		if o.KeystoreCertFile == "" || o.KeystoreKeyFile == "" {
			return nil, nil, errors.New("grpctransport: TLS is enabled but no certificate is configured (TLSOptions.KeystoreCertFile and KeystoreKeyFile, or Certificate; Flink: security.ssl.internal.keystore)")
		}
		if cert, err = tls.LoadX509KeyPair(o.KeystoreCertFile, o.KeystoreKeyFile); err != nil {
			return nil, nil, fmt.Errorf("grpctransport: TLS keystore %s / %s: %w", o.KeystoreCertFile, o.KeystoreKeyFile, err)
		}
	}
	cas := o.CAs
	if cas == nil {
		if o.TruststoreFile == "" {
			return nil, nil, errors.New("grpctransport: TLS is enabled but no truststore is configured (TLSOptions.TruststoreFile or CAs; Flink: security.ssl.internal.truststore)")
		}
		pem, err := os.ReadFile(o.TruststoreFile)
		if err != nil {
			return nil, nil, fmt.Errorf("grpctransport: TLS truststore: %w", err)
		}
		cas = x509.NewCertPool()
		if !cas.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("grpctransport: TLS truststore %s holds no PEM certificate", o.TruststoreFile)
		}
	}
	minVersion := o.MinVersion
	if minVersion == 0 {
		minVersion = tls.VersionTLS12
	}
	server = &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    cas,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   minVersion,
	}
	client = &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      cas,
		MinVersion:   minVersion,
	}
	return server, client, nil
}
