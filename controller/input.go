package controller

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	phalanxv1 "github.com/phalanx-hpc/phalanx/api/phalanx/v1"
	"github.com/phalanx-hpc/phalanx/cluster"
)

// Bounds on what a submit may carry, checked before a spec becomes a job.
// phx checks the same limits (cluster.CheckScript, cluster.CheckEnv)
// before it sends; the controller's check is the one that counts.

// recvMsgSize is the largest request the API accepts: a submit carries its
// script (up to maxScript bytes) and its environment (up to
// cluster.MaxEnvBytes, twice for a client that fills both of its forms),
// with room for the rest. gRPC's default of 4 MiB would refuse a script of
// Slurm's default limit with an error that names no limit.
func recvMsgSize(maxScript int) int {
	return max(4<<20, maxScript+2*cluster.MaxEnvBytes+1<<20)
}

// checkSpecInput refuses a spec whose script or environment passes the
// limits, whose text is not UTF-8 (proto3 strings must be; gRPC refuses
// them on the wire, in-process callers must be refused here) or holds a
// NUL byte, or whose times do not fit a time.Duration.
func checkSpecInput(spec *phalanxv1.JobSpec, maxScript int) error {
	if err := cluster.CheckScript(spec.Script, maxScript); err != nil {
		return fmt.Errorf("batch script: %w", err)
	}
	if err := cluster.CheckEnv(cluster.EnvironOf(spec.Environment, spec.Env)); err != nil {
		return err
	}
	if err := cluster.CheckCommand(spec.ScriptPath, spec.ScriptArgs, spec.SubmitLine, spec.Comment); err != nil {
		return err
	}
	if err := cluster.CheckJobName(spec.Name); err != nil {
		return err
	}
	if err := checkText(spec.ProtoReflect()); err != nil {
		return err
	}
	const most = int64(cluster.MaxTimeLimit / time.Second)
	switch {
	case spec.TimeLimitSeconds > most:
		return cluster.Errorf(cluster.ErrInvalid, "time limit of %d seconds is longer than %d days: ask for less, or for UNLIMITED", spec.TimeLimitSeconds, cluster.MaxTimeLimit/(24*time.Hour))
	case spec.SwitchesWaitSeconds > most:
		return cluster.Errorf(cluster.ErrInvalid, "--switches wait of %d seconds is longer than %d days", spec.SwitchesWaitSeconds, cluster.MaxTimeLimit/(24*time.Hour))
	}
	return nil
}

// checkText refuses a message with a string (alone, in a list or in a
// map) that is not UTF-8, or that holds a NUL byte, which no path, name or
// argument of a task can (the job was taken, then failed at launch),
// naming its field. It passes over the fields checkSpecInput has checked
// the same way with messages that say where (checkedText): reading a list
// through reflection copies each string, and the environment is most of a
// submit's strings.
func checkText(m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if checkedText[fd.Name()] {
			return true
		}
		switch {
		case !allStrings(fd, v, utf8.ValidString):
			err = cluster.Errorf(cluster.ErrInvalid, "the job's %s is not valid UTF-8: send text in UTF-8", fd.Name())
		case !allStrings(fd, v, func(s string) bool { return strings.IndexByte(s, 0) < 0 }):
			err = cluster.Errorf(cluster.ErrInvalid, "the job's %s holds a NUL byte, which no path, name or process argument can: remove it", fd.Name())
		}
		return err == nil
	})
	return err
}

// checkedText are the JobSpec fields whose text checkSpecInput checks
// before checkText: the script (cluster.CheckScript, by line), the
// environment list (cluster.CheckEnv, by variable) and the script's
// arguments (cluster.CheckCommand, by argument). The environment's map
// form is checked by CheckEnv only when the list is empty, so checkText
// reads it.
var checkedText = map[protoreflect.Name]bool{"script": true, "environment": true, "script_args": true}

// allStrings reports whether ok holds for every string of one field's
// value.
func allStrings(fd protoreflect.FieldDescriptor, v protoreflect.Value, ok func(string) bool) bool {
	all := true
	switch {
	case fd.IsMap():
		v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
			all = ok(k.String()) && (fd.MapValue().Kind() != protoreflect.StringKind || ok(e.String()))
			return all
		})
	case fd.IsList() && fd.Kind() == protoreflect.StringKind:
		for i, l := 0, v.List(); i < l.Len() && all; i++ {
			all = ok(l.Get(i).String())
		}
	case fd.Kind() == protoreflect.StringKind:
		all = ok(v.String())
	}
	return all
}
