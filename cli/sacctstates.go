package cli

import (
	"strings"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// sacct -s takes the job states of Slurm 22.05's accounting records, by
// name or code in any case, as its sacct does (checked live): a state it
// records is taken, one it knows but never records (a state flag such as
// COMPLETING) is refused, and so is any other word. Phalanx records
// neither SUSPENDED, BOOT_FAIL, OUT_OF_MEMORY, RESIZING nor REVOKED: they
// are taken and select nothing.

// sacctStates are the states sacct -s takes: the name each code stands for.
var sacctStates = map[string]string{
	"PD": "PENDING", "R": "RUNNING", "S": "SUSPENDED", "CD": "COMPLETED",
	"CA": "CANCELLED", "F": "FAILED", "TO": "TIMEOUT", "NF": "NODE_FAIL",
	"PR": "PREEMPTED", "BF": "BOOT_FAIL", "DL": "DEADLINE", "OOM": "OUT_OF_MEMORY",
	"RQ": "REQUEUED", "RS": "RESIZING", "RV": "REVOKED",
}

// sacctUnaccounted are the states Slurm knows but never records, which
// its sacct -s refuses, by code and name.
var sacctUnaccounted = map[string]string{
	"CF": "CONFIGURING", "CG": "COMPLETING", "SE": "SPECIAL_EXIT", "ST": "STOPPED",
	"RH": "REQUEUE_HOLD", "RF": "REQUEUE_FED", "SI": "SIGNALING", "SO": "STAGE_OUT",
	"RD": "RESV_DEL_HOLD",
}

// parseSacctState reads one state of -s, as Slurm's sacct does: not
// trimmed ("CD, F" is " F", unknown); an error is Slurm's, word for word.
func parseSacctState(s string) (string, error) {
	if name, ok := lookupState(sacctStates, s); ok {
		return name, nil
	}
	if _, ok := lookupState(sacctUnaccounted, s); ok {
		return "", &rawError{msg: "sacct: fatal: job state " + s + " is not supported / accounted"}
	}
	return "", &rawError{msg: "sacct: fatal: unrecognized job state value '" + s + "'"}
}

// lookupState finds s among states, as a code or a name, in any case.
func lookupState(states map[string]string, s string) (string, bool) {
	up := strings.ToUpper(s)
	if name, ok := states[up]; ok {
		return name, true
	}
	for _, name := range states {
		if name == up {
			return name, true
		}
	}
	return "", false
}

// accountedState is a row's state as Slurm's accounting records it: a job
// still configuring its nodes is RUNNING there.
func accountedState(st string) string {
	if st == string(cluster.JobConfiguring) {
		return string(cluster.JobRunning)
	}
	return st
}
