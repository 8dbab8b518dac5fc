package hostlist

import (
	"sort"
	"strconv"
	"strings"
)

// host is a name split around its last run of digits: prefix, number, suffix.
type host struct {
	name           string
	prefix, suffix string
	digits         string // empty: the name has no usable number
	num            uint64
}

func splitHost(name string) host {
	h := host{name: name, prefix: name}
	end := len(name)
	for end > 0 && !isDigit(name[end-1]) {
		end--
	}
	start := end
	for start > 0 && isDigit(name[start-1]) {
		start--
	}
	if start == end {
		return h
	}
	n, err := strconv.ParseUint(name[start:end], 10, 64)
	if err != nil {
		return h // too many digits to be a host number: keep it literal
	}
	h.prefix, h.digits, h.num, h.suffix = name[:start], name[start:end], n, name[end:]
	return h
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// less orders hosts as Compress lists them: by prefix, then suffix, names
// without a number first, then by number, then by spelling (gpu01 before gpu1).
func less(a, b host) bool {
	if a.prefix != b.prefix {
		return a.prefix < b.prefix
	}
	if a.suffix != b.suffix {
		return a.suffix < b.suffix
	}
	if (a.digits == "") != (b.digits == "") {
		return a.digits == ""
	}
	if a.num != b.num {
		return a.num < b.num
	}
	return a.digits < b.digits
}

// Sort sorts names, removes duplicates and returns them in the order Expand
// returns Compress's result: by prefix and suffix around the last number,
// then numerically.
func Sort(names []string) []string {
	hosts := sortedHosts(names)
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.name
	}
	return out
}

func sortedHosts(names []string) []host {
	hosts := make([]host, 0, len(names))
	for _, n := range names {
		hosts = append(hosts, splitHost(n))
	}
	sort.Slice(hosts, func(i, j int) bool { return less(hosts[i], hosts[j]) })
	out := hosts[:0]
	for i, h := range hosts {
		if i == 0 || h.name != hosts[i-1].name {
			out = append(out, h)
		}
	}
	return out
}

// Compress returns the Slurm hostlist expression for names, e.g.
// gpu[001-003,005]. Duplicates are dropped and names are ordered as Sort
// orders them; Expand(Compress(x)) equals Sort(x). Names are expected not
// to contain brackets, commas or spaces.
func Compress(names []string) string {
	return compressHosts(sortedHosts(names))
}

// CompressInOrder returns a hostlist expression for names in the order
// given, duplicates kept (Slurm's unsorted form: scontrol show hostlist
// n3,n1,n2 is n[3,1-2]); Expand(CompressInOrder(x)) equals x.
func CompressInOrder(names []string) string {
	hosts := make([]host, len(names))
	for i, n := range names {
		hosts[i] = splitHost(n)
	}
	return compressHosts(hosts)
}

// compressHosts writes hosts, in their order, as an expression: runs of
// neighbours sharing prefix and suffix become one bracket.
func compressHosts(hosts []host) string {
	var b strings.Builder
	for i := 0; i < len(hosts); {
		j := i + 1
		for j < len(hosts) && sameGroup(hosts[i], hosts[j]) {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		writeGroup(&b, hosts[i:j])
		i = j
	}
	return b.String()
}

func sameGroup(a, b host) bool {
	return a.digits != "" && b.digits != "" && a.prefix == b.prefix && a.suffix == b.suffix
}

// writeGroup writes hosts sharing prefix and suffix, merging each run of
// consecutive numbers into a range.
func writeGroup(b *strings.Builder, hosts []host) {
	if len(hosts) == 1 {
		b.WriteString(hosts[0].name)
		return
	}
	b.WriteString(hosts[0].prefix)
	b.WriteByte('[')
	for i := 0; i < len(hosts); {
		lo := hosts[i]
		j := i + 1
		for j < len(hosts) && hosts[j].num == hosts[j-1].num+1 && pad(hosts[j].num, len(lo.digits)) == hosts[j].digits {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(lo.digits)
		if j-1 > i {
			b.WriteByte('-')
			b.WriteString(pad(hosts[j-1].num, len(lo.digits)))
		}
		i = j
	}
	b.WriteByte(']')
	b.WriteString(hosts[0].suffix)
}

// Less orders two names as Sort does: gpu9 before gpu10, gpu010 before gpu10.
func Less(a, b string) bool {
	ha, hb := splitHost(a), splitHost(b)
	if less(ha, hb) {
		return true
	}
	return !less(hb, ha) && a < b
}
