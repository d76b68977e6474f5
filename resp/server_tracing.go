package resp

import (
	"context"
	"math/rand/v2"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/rlserver/rlserver/internal/sampled"
)

// Tracing of RESP commands (Config.TracerProvider): a random share of the commands
// get a span each, named by the command (RL.TOKEN, CLIENT SETNAME), with the
// command, its number of arguments and keys and the kind of its reply as attributes,
// never a key or an argument: they may be personal data (an address, a user).
//
// The sample is drawn per command before anything is built: a command left out pays
// a random draw (tracing on) or a nil check (off), no allocation, where the SDK's own
// sampler would allocate a span and a context for each (BenchmarkTracing).

// Attributes of a command's span.
const (
	attrCommand = attribute.Key("rlserver.command")
	attrArgs    = attribute.Key("rlserver.args") // the arguments after the command's name
	attrKeys    = attribute.Key("rlserver.keys")
	attrReply   = attribute.Key("rlserver.reply") // replyAllowed, replyRefused, replyError or replyOK
)

// The kinds of a reply, attrReply's values.
const (
	replyAllowed = "allowed" // a limiter allowed the call (all of EXEC's that decided)
	replyRefused = "refused" // a limiter refused it (one of EXEC's)
	replyError   = "error"   // an error reply (one of EXEC's)
	replyOK      = "ok"      // a command that decides nothing answered
)

// The verdicts a command's run records in client.verdict (client.decided).
const (
	verdictAllowed = 1 << iota
	verdictRefused
)

// tracer traces a share of the commands.
type tracer struct {
	t    trace.Tracer    // nil: tracing off
	rate float64         // the share traced, 0 to 1
	ctx  context.Context // sampled.Mark's: the provider keeps the spans started from it
}

func newTracer(tp trace.TracerProvider, rate float64) tracer {
	if tp == nil {
		return tracer{}
	}
	return tracer{t: tp.Tracer("github.com/rlserver/rlserver/resp"), rate: rate, ctx: sampled.Mark(context.Background())}
}

// sample reports whether the command under way is traced. rand/v2's draw is the
// runtime's per-thread generator: no lock, no allocation.
func (t *tracer) sample() bool { return t.t != nil && rand.Float64() < t.rate }

// admitTraced is admit within a span of cm.
func (s *Server) admitTraced(c *client, cm *command, args [][]byte) {
	name := upper(cm.full)
	_, span := s.trace.t.Start(s.trace.ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	errs := c.errors.Load()
	c.verdict = 0
	s.admit(c, cm, args)
	span.SetAttributes(attrCommand.String(name), attrArgs.Int(len(args)-1), attrKeys.Int(keyCount(cm, args)))
	switch {
	case c.errors.Load() != errs:
		span.SetAttributes(attrReply.String(replyError))
	case cm.detaches:
		// c may be another goroutine's now (SUBSCRIBE, MONITOR): verdict is not ours
		// to read, and such a command decides nothing.
		span.SetAttributes(attrReply.String(replyOK))
	case c.verdict&verdictRefused != 0:
		span.SetAttributes(attrReply.String(replyRefused))
	case c.verdict&verdictAllowed != 0:
		span.SetAttributes(attrReply.String(replyAllowed))
	default:
		span.SetAttributes(attrReply.String(replyOK))
	}
}

// keyCount is how many keys a call of cm names, 0 if its arguments are too few to say.
func keyCount(cm *command, args [][]byte) int {
	if cm.firstKey == 0 && cm.keys == nil || !cm.arityOK(len(args)) {
		return 0
	}
	return len(commandKeys(cm, args))
}

// decided records for the command's span whether a limiter allowed its call.
func (c *client) decided(allowed bool) {
	if allowed {
		c.verdict |= verdictAllowed
	} else {
		c.verdict |= verdictRefused
	}
}
