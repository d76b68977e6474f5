// Package sampled marks a context whose trace its front has sampled already:
// internal/tracing's sampler keeps a span started from it, without a parent, whatever
// the sampling rate. It imports nothing of OpenTelemetry's, so that a front marks its
// contexts without the SDK and its exporters.
package sampled

import "context"

// key is the mark's context key.
type key struct{}

// Mark is ctx marked as sampled.
func Mark(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// Marked reports whether ctx is marked as sampled.
func Marked(ctx context.Context) bool { return ctx != nil && ctx.Value(key{}) != nil }
