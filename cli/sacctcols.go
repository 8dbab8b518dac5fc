package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// sacct --format, read as Slurm 22.05's sacct reads it (checked live):
// fields NAME[%WIDTH], comma-separated; NAME any prefix, in any case, of a
// field's name, the first in Slurm's (alphabetical) list, or of ALL;
// WIDTH read as C's atoi reads it (%-WIDTH: left-aligned). The list ends
// at its first empty field.

// slurmFieldNames are the fields of Slurm 22.05's sacct, in its order (its
// --helpformat). A name resolves among them (and phx's own, GPUHours,
// Planned, Restarts) as in Slurm, so that a prefix never stands for
// another field than Slurm's; those phx does not have are refused.
var slurmFieldNames = strings.Fields(`Account AdminComment AllocCPUS AllocNodes
	AllocTRES AssocID AveCPU AveCPUFreq AveDiskRead AveDiskWrite AvePages AveRSS
	AveVMSize BlockID Cluster Comment Constraints ConsumedEnergy ConsumedEnergyRaw
	Container CPUTime CPUTimeRAW DBIndex DerivedExitCode Elapsed ElapsedRaw Eligible
	End ExitCode Flags GID Group JobID JobIDRaw JobName Layout MaxDiskRead
	MaxDiskReadNode MaxDiskReadTask MaxDiskWrite MaxDiskWriteNode MaxDiskWriteTask
	MaxPages MaxPagesNode MaxPagesTask MaxRSS MaxRSSNode MaxRSSTask MaxVMSize
	MaxVMSizeNode MaxVMSizeTask McsLabel MinCPU MinCPUNode MinCPUTask NCPUS NNodes
	NodeList NTasks Partition Priority QOS QOSRAW Reason ReqCPUFreq ReqCPUFreqGov
	ReqCPUFreqMax ReqCPUFreqMin ReqCPUS ReqMem ReqNodes ReqTRES Reservation
	ReservationId Reserved ResvCPU ResvCPURAW Start State Submit SubmitLine
	Suspended SystemComment SystemCPU Timelimit TimelimitRaw TotalCPU
	TRESUsageInAve TRESUsageInMax TRESUsageInMaxNode TRESUsageInMaxTask
	TRESUsageInMin TRESUsageInMinNode TRESUsageInMinTask TRESUsageInTot
	TRESUsageOutAve TRESUsageOutMax TRESUsageOutMaxNode TRESUsageOutMaxTask
	TRESUsageOutMin TRESUsageOutMinNode TRESUsageOutMinTask TRESUsageOutTot UID
	User UserCPU WCKey WCKeyID WorkDir`)

// fieldNames are Slurm's names and phx's own, in Slurm's order: the
// names a --format name is looked up among.
var fieldNames []string

func init() {
	sacctFields = append(sacctFields, sacctMore...)
	byName := func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) }
	slices.SortStableFunc(sacctFields, func(a, b sacctField) int { return byName(a.name, b.name) })
	fieldNames = slices.Clone(slurmFieldNames)
	for _, f := range sacctFields {
		if !slices.Contains(fieldNames, f.name) {
			fieldNames = append(fieldNames, f.name)
		}
	}
	slices.SortStableFunc(fieldNames, byName)
}

// sacctColumn is a field of the --format given, with its width.
type sacctColumn struct {
	f     *sacctField
	width int
}

// sacctColumns reads --format.
func sacctColumns(format string) ([]sacctColumn, error) {
	var out []sacctColumn
	for _, tok := range strings.Split(orDefault(format, SacctDefaultFormat), ",") {
		if tok = strings.TrimLeft(tok, " \t\n\v\f\r"); tok == "" {
			break // Slurm's sacct reads no further
		}
		name, w, hasWidth := strings.Cut(tok, "%")
		fields, err := sacctLookup(name)
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			c := sacctColumn{f: f, width: f.width}
			if hasWidth {
				if c.width, err = sacctWidth(w); err != nil {
					return nil, fmt.Errorf("--format: %q: %w", tok, err)
				}
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// sacctLookup returns the fields a --format name stands for: every one
// for a prefix of ALL, else the first field in Slurm's order whose name it
// begins, in any case. A name no field begins is refused as Slurm refuses
// it; one that stands for a field of Slurm's that phx does not have, with
// an error that says so.
func sacctLookup(name string) ([]*sacctField, error) {
	if strings.HasPrefix("all", strings.ToLower(name)) { // "%5" too: ALL, 5 wide
		all := make([]*sacctField, len(sacctFields))
		for i := range sacctFields {
			all[i] = &sacctFields[i]
		}
		return all, nil
	}
	for _, n := range fieldNames {
		if len(name) > len(n) || !strings.EqualFold(n[:len(name)], name) {
			continue
		}
		for i := range sacctFields {
			if sacctFields[i].name == n {
				return []*sacctField{&sacctFields[i]}, nil
			}
		}
		return nil, fmt.Errorf("%s is a field of Slurm's that Phalanx does not record: it keeps no job steps, usage, energy, reservations, WCKeys or database IDs (sacct --helpformat lists the fields it has)", n)
	}
	return nil, &rawError{msg: fmt.Sprintf("sacct: error: Invalid field requested: %q", name)}
}

// sacctWidth reads a field's width as Slurm's sacct does, with C's atoi (a
// negative one is right-aligned), but refuses one over maxFieldWidth
// either way rather than pad every line to it.
func sacctWidth(s string) (int, error) {
	n, err := atoi(s)
	if err != nil || n > maxFieldWidth || n < -maxFieldWidth {
		return 0, widthError(strings.TrimSpace(s))
	}
	return n, nil
}

// atoi reads a number as C's atoi does: leading spaces, a sign, then the
// digits there are (none: 0); err is a number out of int's range.
func atoi(s string) (int, error) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[0] == '-' || s[0] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 || (end == 1 && (s[0] == '-' || s[0] == '+')) {
		return 0, nil
	}
	return strconv.Atoi(s[:end])
}

// sacctFieldHelp is what sacct --helpformat prints, laid out as Slurm's:
// each name padded to 19, four a line, separated by a space.
func sacctFieldHelp() string {
	var b strings.Builder
	for i, f := range sacctFields {
		switch {
		case i%4 != 0:
			b.WriteByte(' ')
		case i > 0:
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-19s", f.name)
	}
	b.WriteByte('\n')
	return b.String()
}
