package sbatch

import "fmt"

// warnings collects warnings in the order first given, each once: a script
// with 22,000 "#SBATCH --comment" lines gives one line, with its count,
// not 22,000.
type warnings struct {
	order []string
	count map[string]int
}

func (w *warnings) add(msg string) {
	if w.count == nil {
		w.count = map[string]int{}
	}
	if w.count[msg] == 0 {
		w.order = append(w.order, msg)
	}
	w.count[msg]++
}

// list returns the warnings, a repeated one with how often it was given.
func (w *warnings) list() []string {
	if len(w.order) == 0 {
		return nil
	}
	out := make([]string, len(w.order))
	for i, msg := range w.order {
		out[i] = msg
		if n := w.count[msg]; n > 1 {
			out[i] = fmt.Sprintf("%s (given %d times)", msg, n)
		}
	}
	return out
}
