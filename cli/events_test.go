package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// parseEvent reads "event seq=N time=-1h node=NAME kind=KIND user=U
// message=TEXT" of the golden files.
func parseEvent(t *testing.T, a kvs) *phalanxv1.Event {
	return &phalanxv1.Event{Seq: a.uint(t, "seq"), Time: a.time(t, "time"), Node: a["node"], Kind: a["kind"], User: a["user"], Message: a["message"]}
}

func TestEventsArguments(t *testing.T) {
	q, err := parseEvents([]string{"--node", "gpu[001-002]", "-n", "cpu01", "--since=now-1hour", "-h"}, testNow, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(q.req.Nodes, ","); got != "gpu001,gpu002,cpu01" || !q.noHeader {
		t.Errorf("nodes %s, noheader %v", got, q.noHeader)
	}
	if got := q.req.Since.AsTime(); !got.Equal(testNow.Add(-time.Hour)) {
		t.Errorf("--since=now-1hour: %v, want %v", got, testNow.Add(-time.Hour))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "yesterday"}, `--since=yesterday: invalid time "yesterday": use YYYY-MM-DD`},
		{[]string{"--node", "gpu[3-1]"}, "--node=gpu[3-1]: "},
		{[]string{"gpu001"}, `unexpected argument "gpu001": name nodes with --node`},
		{[]string{"--since"}, "since"},
		{[]string{"--nodes=gpu001"}, "nodes"},
	} {
		if _, err := parseEvents(tc.args, testNow, time.UTC); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("events %v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	q, err = parseEvents([]string{"-S", "2026-11-25T10:00"}, testNow, paris)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.req.Since.AsTime(), time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC); !got.Equal(want) || q.req.Nodes != nil {
		t.Errorf("--since 2026-11-25T10:00 in Paris: %v, want %v (and every node: %v)", got, want, q.req.Nodes)
	}
}

// eventsController answers ListEvents from a fixed list, pageSize at a
// time, and records the requests.
type eventsController struct {
	phalanxv1.UnimplementedControllerServiceServer
	events   []*phalanxv1.Event
	pageSize int
	mu       sync.Mutex
	reqs     []*phalanxv1.ListEventsRequest
}

func (f *eventsController) ListEvents(_ context.Context, req *phalanxv1.ListEventsRequest) (*phalanxv1.ListEventsResponse, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	for _, n := range req.Nodes {
		if n == "typo" {
			return nil, status.Errorf(codes.NotFound, "Invalid node name specified: %s", n)
		}
	}
	start, _ := strconv.Atoi(req.PageToken)
	end := min(start+f.pageSize, len(f.events))
	resp := &phalanxv1.ListEventsResponse{Events: f.events[start:end]}
	if end < len(f.events) {
		resp.NextPageToken = strconv.Itoa(end)
	}
	return resp, nil
}

// phx events follows the pages to the end, sends the nodes and the time
// asked for, and prints one line per event; a refusal is one error line
// and status 1.
func TestEventsCommand(t *testing.T) {
	f := &eventsController{pageSize: 2}
	for i, kind := range []string{"registered", "drained", "resumed"} {
		f.events = append(f.events, &phalanxv1.Event{Seq: uint64(i + 1), Time: timestamppb.New(testNow.Add(time.Duration(i) * time.Minute)),
			Node: "gpu001", Kind: kind, User: "phalanx", Message: fmt.Sprint("message ", i+1)})
	}
	sys, stdout, stderr := testSystem(t, serveFake(t, f))
	if code := Run(context.Background(), sys, []string{"phx", "events", "--node", "gpu001", "--since", "now-1day"}); code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if got, want := stdout.String(), FormatEvents(f.events, false, time.Local); got != want || strings.Count(got, "\n") != 4 {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
	if len(f.reqs) != 2 || f.reqs[1].PageToken != "2" {
		t.Fatalf("requests %v: want two pages", f.reqs)
	}
	if r := f.reqs[0]; strings.Join(r.Nodes, ",") != "gpu001" || !r.Since.AsTime().Equal(testNow.Add(-24*time.Hour)) {
		t.Errorf("request %v: want node gpu001 since %v", r, testNow.Add(-24*time.Hour))
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--node", "typo"}, "events: error: Invalid node name specified: typo\n"},
		{[]string{"--since", "soon"}, `events: error: --since=soon: invalid time "soon": use `},
	} {
		sys, stdout, stderr := testSystem(t, serveFake(t, f))
		code := Run(context.Background(), sys, append([]string{"phx", "events"}, tc.args...))
		if code != 1 || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("phx events %v: status %d, stdout %q, stderr %q; want 1 and one line starting %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// --job selects jobs' events; the NODE column names the job of a job's
// event.
func TestEventsJobs(t *testing.T) {
	q, err := parseEvents([]string{"--job", "7,9", "-j", "12"}, testNow, time.UTC)
	if err != nil || fmt.Sprint(q.req.Jobs) != "[7 9 12]" {
		t.Fatalf("--job 7,9 -j 12: %v, %v", q, err)
	}
	if _, err := parseEvents([]string{"--job", "7,x"}, testNow, time.UTC); err == nil || !strings.Contains(err.Error(), `"x" is not a job ID`) {
		t.Errorf("--job 7,x: %v", err)
	}
	out := FormatEvents([]*phalanxv1.Event{{Job: 7, Kind: "checkpoint", User: "phalanx", Message: "checkpoint step 40 complete"}}, true, time.UTC)
	if !strings.Contains(out, "job 7  checkpoint  phalanx  checkpoint step 40 complete") {
		t.Errorf("a job's event: %q", out)
	}
}
