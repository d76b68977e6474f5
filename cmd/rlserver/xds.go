package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/rlserver/rlserver/policy/engine"
	"github.com/rlserver/rlserver/policy/xds"
)

// xdsOptions are the flags of a policy taken from an xDS management server (package
// policy/xds), envoyproxy/ratelimit's CONFIG_TYPE=GRPC_XDS_SOTW.
type xdsOptions struct {
	server, nodeID     string
	tls                bool
	cert, key, ca, san string
	forceStart         bool
}

func xdsFlags(fs *flag.FlagSet, x *xdsOptions) {
	fs.StringVar(&x.server, "xds-server", "", "`host:port` of an xDS server the policy comes from (RateLimitConfig resources), instead of -limits")
	fs.StringVar(&x.nodeID, "xds-node-id", "", "the node `id` -xds-server knows this service by")
	fs.BoolVar(&x.tls, "xds-tls", false, "reach -xds-server over TLS")
	fs.StringVar(&x.cert, "xds-tls-cert", "", "PEM client certificate `file` shown to -xds-server (with -xds-tls-key)")
	fs.StringVar(&x.key, "xds-tls-key", "", "PEM private key `file` of -xds-tls-cert")
	fs.StringVar(&x.ca, "xds-tls-ca", "", "PEM `file` of the CAs -xds-server's certificate is checked against; empty: the system's")
	fs.StringVar(&x.san, "xds-tls-san", "", "the `name` -xds-server's certificate must carry; empty: its host")
	fs.BoolVar(&x.forceStart, "xds-force-start", false, "serve before -xds-server delivers a policy (envoyproxy/ratelimit's FORCE_START_WITHOUT_INITIAL_CONFIG)")
}

// config is the policy/xds Config of x.
func (x xdsOptions) config() (xds.Config, error) {
	c := xds.Config{Server: x.server, NodeID: x.nodeID}
	if x.nodeID == "" {
		return c, errors.New("-xds-server needs -xds-node-id")
	}
	if !x.tls {
		if x.cert != "" || x.ca != "" || x.san != "" {
			return c, errors.New("-xds-tls-cert, -xds-tls-ca and -xds-tls-san need -xds-tls")
		}
		return c, nil
	}
	c.TLS = &tls.Config{ServerName: x.san, MinVersion: tls.VersionTLS12}
	if (x.cert == "") != (x.key == "") {
		return c, errors.New("-xds-tls-cert and -xds-tls-key go together")
	}
	if x.cert != "" {
		pair, err := tls.LoadX509KeyPair(x.cert, x.key)
		if err != nil {
			return c, fmt.Errorf("-xds-tls-cert: %w", err)
		}
		c.TLS.Certificates = []tls.Certificate{pair}
	}
	if x.ca != "" {
		pem, err := os.ReadFile(x.ca)
		if err != nil {
			return c, fmt.Errorf("-xds-tls-ca: %w", err)
		}
		c.TLS.RootCAs = x509.NewCertPool()
		if !c.TLS.RootCAs.AppendCertsFromPEM(pem) {
			return c, fmt.Errorf("-xds-tls-ca: no PEM certificate in %s", x.ca)
		}
	}
	return c, nil
}

// startXDS takes eng's policy from x's server until ctx ends; unless -xds-force-start
// it returns once the first policy is in force, as envoyproxy/ratelimit waits for
// its first configuration before serving.
func startXDS(ctx context.Context, x xdsOptions, eng *engine.Engine, logger *slog.Logger) error {
	c, err := x.config()
	if err != nil {
		return err
	}
	first := make(chan struct{})
	var once bool
	loaded := func() {
		if !once {
			once = true
			close(first)
		}
	}
	runErr := make(chan error, 1)
	go func() { runErr <- xds.Run(ctx, c, eng, logger, loaded) }()
	if x.forceStart {
		return nil
	}
	logger.Info("waiting for the first policy from the xDS server", "server", x.server, "node", x.nodeID)
	select {
	case <-first:
		return nil
	case err := <-runErr:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
