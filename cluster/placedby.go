package cluster

// PlacedBy says how the scheduler came to start an attempt, which Slurm's
// sacct shows as the job's Flags. Slurm's main scheduler starts jobs in
// priority order and, once a job of a partition is left waiting, starts
// nothing more in that partition or on its nodes; its backfill scheduler
// then starts later jobs around the waiting ones. Phalanx's one pass does
// both, so it records which of the two a placement was.
type PlacedBy uint8

// How an attempt was placed.
const (
	// PlacedUnknown: not recorded (placed by a version before the record
	// kept it) or not placed.
	PlacedUnknown PlacedBy = iota
	// PlacedMain: in priority order; no job decided before it in its pass
	// was left waiting in a partition holding any of its nodes (Slurm's
	// SchedMain).
	PlacedMain
	// PlacedBackfill: ahead of a job decided before it in its pass and left
	// waiting in a partition holding one of its nodes, which it does not
	// delay (Slurm's SchedBackfill).
	PlacedBackfill
)

var placedByNames = map[PlacedBy]string{PlacedMain: "main", PlacedBackfill: "backfill"}

// String is "main", "backfill", or empty when unknown.
func (b PlacedBy) String() string { return placedByNames[b] }
