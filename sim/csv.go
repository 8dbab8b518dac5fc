package sim

import (
	"encoding/csv"
	"io"
	"strconv"
)

// csvHeader names the columns WriteCSV writes.
var csvHeader = []string{"id", "submit", "start", "end", "nodes", "leaves", "gpus_per_node", "wait_s",
	"state", "min_leaves", "requeues", "backfilled"}

// WriteCSV writes a header and one row per job, times in virtual seconds
// from Epoch; start is the last attempt's; an empty cell means it did not
// happen (never started, never ended).
func WriteCSV(w io.Writer, jobs []JobRecord) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, j := range jobs {
		start, end, wait, leaves := "", "", "", ""
		if j.Started {
			start, wait, leaves = num(j.Start), num(j.Wait), strconv.Itoa(j.Leaves)
		}
		if j.State != "PENDING" && j.State != "REJECTED" {
			end = num(j.End)
		}
		row := []string{j.ID, num(j.Submit), start, end, strconv.Itoa(j.Nodes), leaves,
			strconv.Itoa(j.GPUsPerNode), wait, j.State, strconv.Itoa(j.MinLeaves), strconv.Itoa(j.Requeues),
			strconv.FormatBool(j.Backfilled)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
