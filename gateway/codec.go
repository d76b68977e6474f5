package gateway

import (
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// undecoded is a RateLimitRequest as received, decoded by its handler: grpc-go
// answers a message that does not decode INTERNAL itself, before any handler runs,
// which reads as the server's fault; it is the caller's, INVALID_ARGUMENT.
type undecoded struct {
	req pb.RateLimitRequest
	err error // proto.Unmarshal's
}

// codec is grpc-go's proto codec, but for undecoded, whose error it keeps for the
// handler instead of failing the call, and for the messages go-control-plane
// generates vtprotobuf code for (RateLimitResponse), marshalled by that code rather
// than by reflection.
type codec struct{ encoding.CodecV2 }

// vtMarshaler is a message with vtprotobuf's generated marshalling.
type vtMarshaler interface{ MarshalVTStrict() ([]byte, error) }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMarshaler)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	b, err := m.MarshalVTStrict()
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func newCodec() codec { return codec{encoding.GetCodecV2("proto")} }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	u, ok := v.(*undecoded)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	u.err = proto.Unmarshal(buf.ReadOnlyData(), &u.req)
	return nil
}
