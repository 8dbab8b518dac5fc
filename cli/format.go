package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// timeLayout is how Slurm prints times (scontrol, squeue %S and %V).
const timeLayout = "2006-01-02T15:04:05"

// fmtTime prints a timestamp in loc, or def when unset.
func fmtTime(ts *timestamppb.Timestamp, loc *time.Location, def string) string {
	if ts == nil {
		return def
	}
	return ts.AsTime().In(loc).Format(timeLayout)
}

// field is one %-directive of a Slurm format string, or literal text.
type field struct {
	literal string
	verb    byte
	width   int // 0: as wide as the value
	right   bool
}

// parseFormat parses "%[.][width]X" directives between literal text, as
// squeue -o and sinfo -o take them. Values are padded to width and cut to
// it, as Slurm does.
func parseFormat(format string, known func(byte) bool) ([]field, error) {
	var out []field
	for len(format) > 0 {
		i := strings.IndexByte(format, '%')
		if i < 0 {
			out = append(out, field{literal: format})
			break
		}
		if i > 0 {
			out = append(out, field{literal: format[:i]})
		}
		format = format[i+1:]
		var f field
		if strings.HasPrefix(format, ".") {
			f.right, format = true, format[1:]
		}
		j := 0
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			j++
		}
		w, err := fieldWidth(format[:j])
		if err != nil {
			return nil, err
		}
		f.width, format = w, format[j:]
		switch {
		case format == "":
			return nil, fmt.Errorf("format ends in the middle of a field: write %%[.][width]X")
		case format[0] == '%':
			out = append(out, field{literal: "%"})
		case !known(format[0]):
			return nil, fmt.Errorf("invalid format field %%%c", format[0])
		default:
			f.verb = format[0]
			out = append(out, f)
		}
		format = format[1:]
	}
	return out, nil
}

// maxFieldWidth bounds a format field's width: room for any path or
// host list a column shows, and a guard against a width that would pad
// each line to gigabytes: in the memory of the daemon (agent, controller)
// whose CLI server runs the command for the user.
const maxFieldWidth = 4096

// widthError is a format field's width over maxFieldWidth, as written.
type widthError string

func (e widthError) Error() string {
	return fmt.Sprintf("field width %s is over %d: give a smaller width", string(e), maxFieldWidth)
}

// fieldWidth reads a format field's width, digits only ("" is 0: as wide
// as the value).
func fieldWidth(digits string) (int, error) {
	if digits == "" {
		return 0, nil
	}
	w, err := strconv.Atoi(digits)
	if err != nil || w > maxFieldWidth {
		return 0, widthError(digits)
	}
	return w, nil
}

// render writes one line: each field's value padded and cut to its width,
// but those whole says are never cut (padded still).
func render(b *strings.Builder, fields []field, value func(byte) string, whole func(byte) bool) {
	var line strings.Builder
	for _, f := range fields {
		if f.verb == 0 {
			line.WriteString(f.literal)
			continue
		}
		v := value(f.verb)
		if whole != nil && whole(f.verb) && utf8.RuneCountInString(v) > f.width {
			line.WriteString(v)
			continue
		}
		line.WriteString(pad(v, f.width, f.right))
	}
	b.WriteString(strings.TrimRight(line.String(), " "))
	b.WriteByte('\n')
}

func pad(s string, width int, right bool) string {
	if width == 0 {
		return s
	}
	if n := utf8.RuneCountInString(s); n > width {
		return string([]rune(s)[:width])
	} else if n < width {
		if right {
			return strings.Repeat(" ", width-n) + s
		}
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// runTime prints an elapsed time as scontrol's RunTime: "HH:MM:SS" or
// "D-HH:MM:SS".
func runTime(d time.Duration) string {
	days, h, m, s := splitDuration(d)
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}

func splitDuration(d time.Duration) (days, h, m, s int64) {
	secs := max(int64(d/time.Second), 0)
	return secs / 86400, secs % 86400 / 3600, secs % 3600 / 60, secs % 60
}
