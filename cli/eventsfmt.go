package cli

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
)

// eventColumns are the headers of phx events.
var eventColumns = []string{"TIME", "NODE", "EVENT", "USER", "MESSAGE"}

// FormatEvents prints node events, one per line, oldest first, as
//
//	TIME                 NODE    EVENT       USER     MESSAGE
//	2026-11-25T10:00:00  gpu001  registered  phalanx  8 GPUs (H100), 8 NICs, ...
//
// Times are in loc, as Slurm prints timestamps. Columns are as wide as
// their widest value, two spaces apart; the message is last and whole.
func FormatEvents(events []*phalanxv1.Event, noHeader bool, loc *time.Location) string {
	rows := make([][]string, 0, len(events)+1)
	if !noHeader {
		rows = append(rows, eventColumns)
	}
	for _, e := range events {
		rows = append(rows, []string{fmtTime(e.Time, loc, "Unknown"), eventSubject(e), e.Kind, e.User, e.Message})
	}
	width := make([]int, len(eventColumns)-1)
	for _, r := range rows {
		for i := range width {
			width[i] = max(width[i], utf8.RuneCountInString(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, v := range r {
			if i < len(width) {
				v = pad(v, width[i], false) + "  "
			}
			line.WriteString(v)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// eventSubject is what an event is about, in the NODE column: the node,
// or "job N" for a job's event.
func eventSubject(e *phalanxv1.Event) string {
	if e.Node == "" && e.Job != 0 {
		return fmt.Sprintf("job %d", e.Job)
	}
	return e.Node
}
