package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/protobuf/types/known/timestamppb"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cli/getopt"
	"github.com/phalanx-hpc/phalanx/topology/hostlist"
)

var eventsOptions = []getopt.Option{
	{Long: "help", Usage: "show this help"},
	{Long: "job", Short: 'j', HasArg: true, Usage: "only these jobs' events (checkpoints): IDs, comma-separated; repeatable"},
	{Long: "node", Short: 'n', HasArg: true, Usage: "only these nodes' events: a name or a hostlist (gpu[001-004],cpu01); repeatable"},
	{Long: "noheader", Short: 'h', Usage: "no header line"},
	{Long: "since", Short: 'S', HasArg: true, Usage: "only events at or after this time (default: every event kept)"},
}

// eventsTimes is the help's note on --since.
const eventsTimes = `
Times (--since): YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY][-HH:MM[:SS]], MMDD[YY][-HH:MM[:SS]],
HH:MM[:SS][AM|PM], today, midnight, noon, now[{+|-}COUNT[seconds|minutes|hours|days|weeks]].
`

func (k *commands) events() *ucli.Command {
	return slurmCommand("events", "list what happened to nodes: registrations, drains, resumes, health verdicts", k.runEvents)
}

// eventsQuery is a parsed events command line.
type eventsQuery struct {
	req            *phalanxv1.ListEventsRequest
	help, noHeader bool
}

// parseEvents reads the command line; times are read at now, in loc.
func parseEvents(args []string, now time.Time, loc *time.Location) (*eventsQuery, error) {
	vals, operands, err := getopt.Parse(eventsOptions, args, getopt.Permute)
	if err != nil {
		return nil, err
	}
	if len(operands) > 0 {
		return nil, fmt.Errorf("unexpected argument %q: name nodes with --node", operands[0])
	}
	q := &eventsQuery{req: &phalanxv1.ListEventsRequest{}}
	for _, v := range vals {
		switch v.Name {
		case "help":
			q.help = true
		case "node":
			names, err := hostlist.Expand(v.Value)
			if err != nil {
				return nil, fmt.Errorf("--node=%s: %w", v.Value, hostlistError(err))
			}
			q.req.Nodes = append(q.req.Nodes, names...)
		case "job":
			for _, f := range strings.Split(v.Value, ",") {
				id, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
				if err != nil || id == 0 {
					return nil, fmt.Errorf("--job=%s: %q is not a job ID", v.Value, f)
				}
				q.req.Jobs = append(q.req.Jobs, id)
			}
		case "noheader":
			q.noHeader = true
		case "since":
			t, err := parseSlurmTime(v.Value, now, loc)
			if err != nil {
				return nil, fmt.Errorf("--since=%s: %w", v.Value, err)
			}
			q.req.Since = timestamppb.New(t)
		}
	}
	return q, nil
}

func (k *commands) runEvents(c *ucli.Context, args []string) error {
	q, err := parseEvents(args, k.sys.Now(), k.loc())
	switch {
	case err != nil:
		return err
	case q.help:
		fmt.Fprintf(k.sys.Stdout, "Usage: phx events [--node NAME] [--since TIME]\n\n%s%s", getopt.Usage(eventsOptions), eventsTimes)
		return nil
	}
	cn, err := k.dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	events, err := cn.listEvents(c.Context, q.req)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(k.sys.Stdout, FormatEvents(events, q.noHeader, k.loc()))
	return err
}
