// Command rlserver is a rate limiter that speaks the Redis protocol: start it,
// then call RL.TOKEN, RL.GCRA, CL.THROTTLE, ... from redis-cli or any Redis client.
// This file is flags and wiring only; the server is package resp.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/rlserver/rlserver/resp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // flag has printed the error and the usage
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: opts.level}))
	if err := run(ctx, opts, logger); err != nil {
		logger.Error("rlserver stopped", "err", err)
		os.Exit(1)
	}
}

// options are the parsed command line.
type options struct {
	addr  string
	level slog.Level
	cfg   resp.Config
}

// parseFlags reads the command line. On error it has printed the message and the
// usage to stderr; -h answers flag.ErrHelp after printing the usage.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("rlserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:6380", "`host:port` to listen on")
	fs.IntVar(&o.cfg.Shards, "shards", 0, "store shards, a power of two; 0 lets the store choose")
	fs.Int64Var(&o.cfg.MaxLogLimit, "max-log-limit", resp.DefaultMaxLogLimit, "largest limit RL.LOG accepts (its memory grows with the limit)")
	fs.BoolVar(&o.cfg.EnableDebugCommand, "enable-debug-command", false, "accept DEBUG CLOCK SET|ADVANCE|REAL, for tests")
	fs.TextVar(&o.level, "loglevel", slog.LevelInfo, "log `level`: DEBUG, INFO, WARN or ERROR (any case)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: rlserver [flags]\n\n"+
			"A rate limiter that speaks the Redis protocol (RESP2 and RESP3).\n"+
			"Try: redis-cli -p 6380 RL.TOKEN user:1 10 1000\n\nFlags:\n")
		// Every flag with its default, zero values included (PrintDefaults hides them).
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			if name != "" {
				name = " " + name
			}
			fmt.Fprintf(fs.Output(), "  -%s%s\n    \t%s (default: %s)\n", f.Name, name, usage, f.DefValue)
		})
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, err
	}
	return o, nil
}

// run listens on opts.addr and serves until ctx is done (SIGINT, SIGTERM) or a
// client sends SHUTDOWN.
func run(ctx context.Context, opts options, logger *slog.Logger) error {
	opts.cfg.Logger = logger
	srv, err := resp.NewServer(opts.cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return err
	}
	return serve(ctx, srv, ln, logger)
}

func serve(ctx context.Context, srv *resp.Server, ln net.Listener, logger *slog.Logger) error {
	logger.Info("rlserver listening", "addr", ln.Addr().String(), "version", resp.Version)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		logger.Info("signal received, shutting down")
		srv.Close()
		return <-done
	case err := <-done:
		logger.Info("server stopped")
		return err
	}
}
