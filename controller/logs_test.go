package controller

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// chunkStream is a JobLogs server stream that keeps what is sent.
type chunkStream struct {
	grpc.ServerStream
	ctx    context.Context
	chunks []*phalanxv1.LogChunk
}

func (l *chunkStream) Context() context.Context { return l.ctx }

func (l *chunkStream) Send(c *phalanxv1.LogChunk) error {
	l.chunks = append(l.chunks, c)
	return nil
}

// The output of a job that never ran is an error that says so, not a
// crash (a pending job has no allocation).
func TestJobLogsOfAPendingJob(t *testing.T) {
	s := newTestServer(t, Config{})
	register(t, s, nil, "n1")
	spec := testSpec(1, 8)
	spec.Hold = true
	resp, err := s.submit(context.Background(), spec, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	api := &controllerService{s: s}
	stream := &chunkStream{ctx: context.Background()}
	err = api.JobLogs(&phalanxv1.JobLogsRequest{JobId: resp.JobId}, stream)
	if status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "has not run yet (it is PENDING)") || len(stream.chunks) != 0 {
		t.Fatalf("JobLogs of a pending job: %v, %d chunks; want NotFound, has not run yet", err, len(stream.chunks))
	}
}

// A handler's panic fails its call with Internal; the replica serves on.
func TestHandlerPanicFailsTheCallOnly(t *testing.T) {
	s := newTestServer(t, Config{})
	boom := func(context.Context, any) (any, error) { panic("boom") }
	_, err := s.recoverUnary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/Y"}, boom)
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v; want Internal naming the panic", err)
	}
	streamBoom := func(any, grpc.ServerStream) error { panic("bang") }
	err = s.recoverStream(nil, &chunkStream{ctx: context.Background()}, &grpc.StreamServerInfo{FullMethod: "/x/Z"}, streamBoom)
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "bang") {
		t.Fatalf("stream err = %v; want Internal naming the panic", err)
	}
	if _, err := s.submit(context.Background(), testSpec(1, 8), true, nil); err == nil || status.Code(toStatus(err)) == codes.Internal {
		t.Fatalf("after the panics the server answers: %v", err)
	}
}
