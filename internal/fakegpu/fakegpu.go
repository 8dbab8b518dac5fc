// Package fakegpu is the fault source of GPUs that do not exist: a file
// of faults, one JSON object a line, that the agent's NVML mock
// (nodeagent/gpu) plays into its fake GPUs while it runs. `phx dev fault`
// and tests append to it; a real GPU host has none.
//
// It imports the standard library only, so that phx (which writes faults
// into a running dev cluster) stays free of NVML and cgo.
package fakegpu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/phalanx-hpc/phalanx/cluster"
)

// Kind is what happens to a fake GPU.
type Kind string

// The faults a fake GPU can have, and its repair.
const (
	// XID raises the XID Fault.XID on the GPU, as the driver does in the
	// kernel log and through NVML's event sets.
	XID Kind = "xid"
	// ECC is an uncorrectable memory error the GPU contained: the
	// volatile and aggregate uncorrectable counters go up by one, a row
	// remap is pending until a reset, and XID 94 is raised.
	ECC Kind = "ecc"
	// Lost makes the GPU fall off the bus: NVML answers GPU_IS_LOST for
	// it, counts one device fewer, and XID 79 is raised.
	Lost Kind = "gpu-lost"
	// Temperature sets the GPU's temperature to Fault.Value °C; at or
	// over its slowdown threshold the hardware throttles its clocks.
	Temperature Kind = "temperature"
	// Reset is `nvidia-smi -r`: the GPU comes back if it was lost, its
	// volatile counters and pending remaps clear, and it cools down.
	Reset Kind = "reset"
)

// Fault is one line of a fault file.
type Fault struct {
	Kind  Kind `json:"kind"`
	GPU   int  `json:"gpu"`             // NVML index
	XID   int  `json:"xid,omitempty"`   // Kind XID
	Value int  `json:"value,omitempty"` // Kind Temperature: °C
}

// Validate says what is wrong with f, for gpus GPUs (0: any index).
func (f Fault) Validate(gpus int) error {
	switch f.Kind {
	case XID:
		if f.XID <= 0 || f.XID > 1000 {
			return fmt.Errorf("fault xid=%d: XIDs run from 1 to 1000: %w", f.XID, cluster.ErrInvalid)
		}
	case Temperature:
		if f.Value < 0 || f.Value > 150 {
			return fmt.Errorf("fault temperature=%d: give 0 to 150 (°C): %w", f.Value, cluster.ErrInvalid)
		}
	case ECC, Lost, Reset:
	default:
		return fmt.Errorf("GPU fault %q: use xid=N, ecc, gpu-lost, temperature=C or reset: %w", f.Kind, cluster.ErrInvalid)
	}
	if f.GPU < 0 || gpus > 0 && f.GPU >= gpus {
		return fmt.Errorf("GPU %d: the node has GPUs 0 to %d: %w", f.GPU, gpus-1, cluster.ErrInvalid)
	}
	return nil
}

// Inject appends f to the fault file at path, creating it.
func Inject(path string, f Fault) error {
	if err := f.Validate(0); err != nil {
		return err
	}
	line, err := json.Marshal(f)
	if err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	// One write of a whole line: a reader never sees half a fault.
	if _, err := file.Write(append(line, '\n')); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// Reader reads the faults appended to a file since it last looked.
type Reader struct {
	Path string
	off  int64
}

// Next returns the whole lines added since the last call (none when the
// file does not exist yet). A line that is not a valid fault is an error
// naming it; the lines after it are still read next time.
func (r *Reader) Next() ([]Fault, error) {
	// A stat first: the fake GPUs look often, and the file rarely grows.
	if fi, err := os.Stat(r.Path); err != nil || fi.Size() <= r.off {
		if os.IsNotExist(err) {
			err = nil
		}
		return nil, err
	}
	file, err := os.Open(r.Path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, err := file.Seek(r.off, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(bufio.NewReader(file))
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, nil
	}
	var faults []Fault
	var bad error
	for _, line := range bytes.Split(data[:end], []byte{'\n'}) {
		var f Fault
		err := json.Unmarshal(line, &f)
		if err == nil {
			err = f.Validate(0)
		}
		if err != nil {
			bad = fmt.Errorf("%s: fault %q: %w", r.Path, line, err)
			continue
		}
		faults = append(faults, f)
	}
	r.off += int64(end) + 1
	return faults, bad
}
