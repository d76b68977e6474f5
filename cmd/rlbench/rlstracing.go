package main

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlserver/rlserver/internal/launch"
)

// spanSink is an OTLP/gRPC trace receiver that counts the spans it is sent and keeps
// none: the collector the traced rlserver exports to.
type spanSink struct {
	coltracepb.UnimplementedTraceServiceServer
	spans atomic.Int64
	srv   *grpc.Server
}

func (s *spanSink) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			s.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// count is how many spans the sink received.
func (s *spanSink) count() int64 { return s.spans.Load() }

// startTracedTarget starts rlserver as startRLSTargets does, with envoyproxy/ratelimit's
// tracing variables at a sampling rate of 1%, exporting to a spanSink on loopback.
func startTracedTarget(bin, dir string, cpu int) (t *rlsTarget, sink *spanSink, err error) {
	sink = &spanSink{srv: grpc.NewServer()}
	coltracepb.RegisterTraceServiceServer(sink.srv, sink)
	defer func() {
		if t == nil {
			sink.srv.Stop()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, sink, err
	}
	go sink.srv.Serve(ln)
	addrs, err := launch.FreeAddrs(2)
	if err != nil {
		return nil, sink, err
	}
	log, err := launch.LogIn(dir, "rlserver-traced")
	if err != nil {
		return nil, sink, err
	}
	p, err := launch.Start(launch.Spec{Name: "rlserver-traced", Addr: addrs[0], Log: log,
		Argv: []string{bin, "-addr", addrs[0], "-loglevel", "WARN", "-rls-addr", addrs[1], "-limits", filepath.Join(dir, "runtime", "rl", "config")},
		Env: []string{"TRACING_ENABLED=true", "TRACING_SAMPLING_RATE=0.01", "TRACING_EXPORTER_PROTOCOL=grpc",
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + ln.Addr().String()}})
	if err != nil {
		return nil, sink, err
	}
	t = &rlsTarget{name: "rlserver -tracing 1%", addr: addrs[1], procs: []*launch.Proc{p}, sink: sink}
	if cpu >= 0 {
		if err := pin(p.Pid(), cpu); err != nil {
			return t, sink, err
		}
	}
	t.conn, err = grpc.NewClient(t.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	return t, sink, err
}
