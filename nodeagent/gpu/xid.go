package gpu

import "fmt"

// Class is what a GPU fault means for the node and for the job on it.
type Class int

// The classes, from NVIDIA's XID catalogue's resolution buckets
// (docs/health.md has the table and its sources).
const (
	// ClassApp is the application's fault (RESTART_APP): its job fails,
	// the node stays in service.
	ClassApp Class = iota + 1
	// ClassReset needs the GPU reset (RESET_GPU): the node is drained and
	// the job goes elsewhere.
	ClassReset
	// ClassHardware needs a repair (RESTART_BM, CONTACT_SUPPORT): the node
	// is drained until an admin has fixed it.
	ClassHardware
)

func (c Class) String() string {
	switch c {
	case ClassApp:
		return "application"
	case ClassReset:
		return "reset"
	case ClassHardware:
		return "hardware"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Action is what an admin does about a fault of class c.
func (c Class) Action() string {
	switch c {
	case ClassApp:
		return "restart the application"
	case ClassReset:
		return "reset the GPU"
	}
	return "repair the node"
}

// xidInfo is one row of the XID table.
type xidInfo struct {
	name  string
	class Class
}

// xids classifies the XIDs data-center GPUs (A100, H100 and later) raise,
// after NVIDIA's XID catalogue. An XID not listed is classed ClassReset:
// an unknown fault takes its node out until someone has looked.
var xids = map[uint64]xidInfo{
	8:   {"GPU stopped processing", ClassApp},
	11:  {"invalid or corrupted push buffer stream", ClassApp},
	13:  {"graphics engine exception", ClassApp},
	31:  {"GPU memory page fault", ClassApp},
	32:  {"invalid or corrupted push buffer stream", ClassApp},
	38:  {"driver firmware error", ClassReset},
	43:  {"GPU stopped processing", ClassApp},
	44:  {"graphics engine fault during context switch", ClassReset},
	45:  {"preemptive cleanup, due to previous errors", ClassApp},
	48:  {"double bit ECC error", ClassReset},
	61:  {"internal micro-controller breakpoint/warning", ClassReset},
	62:  {"internal micro-controller halt", ClassReset},
	63:  {"ECC page retirement or row remapping recorded", ClassReset},
	64:  {"ECC page retirement or row remapping failed", ClassHardware},
	68:  {"NVDEC0 exception", ClassApp},
	69:  {"graphics engine class error", ClassApp},
	74:  {"NVLink error", ClassReset},
	79:  {"GPU has fallen off the bus", ClassHardware},
	92:  {"high single-bit ECC error rate", ClassHardware},
	94:  {"contained ECC error", ClassApp},
	95:  {"uncontained ECC error", ClassReset},
	109: {"context switch timeout", ClassApp},
	119: {"GSP RPC timeout", ClassReset},
	120: {"GSP error", ClassReset},
	140: {"unrecovered ECC error", ClassReset},
	154: {"GPU recovery action changed", ClassReset},
}

// ClassifyXID returns what XID xid is called and its class.
func ClassifyXID(xid uint64) (string, Class) {
	if x, ok := xids[xid]; ok {
		return x.name, x.class
	}
	return "not in Phalanx's XID table", ClassReset
}
